package framework

import (
	"testing"
	"time"
)

// TestWriteExpectationOvertakenByItsEvent: the watch event of a write can
// reach the cache before the reconciliation that made it ends; the write is
// then not expected any more, and the next reconciliation is not held back.
func TestWriteExpectationOvertakenByItsEvent(t *testing.T) {
	s := newObjectState()
	const ttl = 10 * time.Second

	s.begin("ns/a")
	if s.observed("ns/a", "7") {
		t.Fatal("an event during the reconciliation ended a deferred wait")
	}
	s.end("ns/a", "uid", "7", 1, true)
	if stale, _ := s.stale("ns/a", "uid", "8", 1, ttl); stale {
		t.Error("the cache at 8 is stale, although it delivered the write (7) before the reconciliation ended")
	}

	// The usual order: the event comes after the end.
	s.begin("ns/a")
	s.end("ns/a", "uid", "9", 1, true)
	if stale, wait := s.stale("ns/a", "uid", "8", 1, ttl); !stale || wait <= 0 {
		t.Errorf("stale(8) = %v, %v; want stale until the write (9) shows", stale, wait)
	}
	if !s.observed("ns/a", "9") {
		t.Error("the write's event did not end the deferred wait")
	}
	if stale, _ := s.stale("ns/a", "uid", "9", 1, ttl); stale {
		t.Error("stale after the write showed")
	}

	// Nothing written: nothing expected; end forgets the running state.
	s.begin("ns/a")
	s.end("ns/a", "uid", "", 1, false)
	if len(s.running) != 0 || len(s.expected) != 0 {
		t.Errorf("running %v, expected %v after a reconciliation that wrote nothing", s.running, s.expected)
	}

	// The memory of a running reconciliation is bounded.
	s.begin("ns/b")
	for i := range 3 * maxSeen {
		s.observed("ns/b", string(rune('a'+i%26)))
	}
	if n := len(s.running["ns/b"]); n != maxSeen {
		t.Errorf("%d resourceVersions remembered, want at most %d", n, maxSeen)
	}
}
