package framework

import (
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/router"
)

// mustNamedSet returns a resource set named name, of one resource.
func mustNamedSet(t *testing.T, name string) *router.ResourceSet {
	t.Helper()
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: name, Handles: func(any) bool { return true }, Resources: []resource.Interface{&funcResource{name: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

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
	if e := s.objects["ns/a"]; e != nil {
		t.Errorf("entry %+v kept after a reconciliation that wrote nothing, want none", *e)
	}

	// The memory of a running reconciliation is bounded.
	s.begin("ns/b")
	for i := range 3 * maxSeen {
		s.observed("ns/b", string(rune('a'+i%26)))
	}
	if n := len(s.objects["ns/b"].seen); n != maxSeen {
		t.Errorf("%d resourceVersions remembered, want at most %d", n, maxSeen)
	}
}

// TestObjectStateKeepsNothingOfFinishedFacts: an entry holds a key only
// while it holds a fact about it (pending, failed, expected, released, in
// deletion, a resource set), and forget drops it with its count per set:
// objects that come and go leave nothing behind.
func TestObjectStateKeepsNothingOfFinishedFacts(t *testing.T) {
	s := newObjectState()
	s.markPending("ns/a")
	s.begin("ns/a")
	s.setFailed("ns/a")
	s.end("ns/a", "uid", "", 1, false)
	s.done("ns/a")
	if !s.recovered("ns/a") {
		t.Error("recovered after a failure = false")
	}
	s.setDeleting("ns/a", time.Unix(100, 0), true)
	s.setDeleting("ns/a", time.Time{}, false)
	s.release("ns/a")
	s.reclaim("ns/a")
	s.begin("ns/a")
	s.end("ns/a", "uid", "5", 1, true)
	s.observed("ns/a", "5")
	if len(s.objects) != 0 {
		t.Errorf("entries after every fact ended: %v, want none", s.objects)
	}

	v1, v2 := mustNamedSet(t, "v1"), mustNamedSet(t, "v2")
	s.setResourceSet("ns/a", v1)
	s.setResourceSet("ns/b", v1)
	s.setResourceSet("ns/b", v2)
	s.setDeleting("ns/b", time.Now().Add(-time.Minute), true)
	s.markPending("ns/c")
	n, oldestDel, _, perSet := s.stats()
	if n != 1 || oldestDel < time.Minute || perSet["v1"] != 1 || perSet["v2"] != 1 {
		t.Errorf("stats = %d in deletion (oldest %s), per set %v; want 1 (oldest >= 1m), v1=1 v2=1", n, oldestDel, perSet)
	}
	if keys := s.pendingKeys(); len(keys) != 1 || keys[0] != "ns/c" {
		t.Errorf("pendingKeys = %v, want [ns/c]", keys)
	}
	for _, k := range []string{"ns/a", "ns/b", "ns/c"} {
		s.forget(k)
	}
	if n, _, _, perSet := s.stats(); n != 0 || perSet["v1"] != 0 || perSet["v2"] != 0 || len(s.objects) != 0 {
		t.Errorf("after forget: %d in deletion, per set %v, %d entries; want nothing", n, perSet, len(s.objects))
	}
}

// TestFinalizedMarkEndsWithTheObject: the mark of a removed finalizer is
// consumed by the object's delete event, or dropped when the Framework
// forgets an object whose delete event came before the mark (its tombstone
// was reconciled, the finalizer patch having answered 404); a cache that
// dropped the object before its delete event reached the handler does not
// drop it, or that event would run the delete chain again.
func TestFinalizedMarkEndsWithTheObject(t *testing.T) {
	const uid = types.UID("u1")
	marks := func(s *objectState) int {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.finalizedUID)
	}

	// The delete event before the mark: it left a tombstone.
	s := newObjectState()
	s.begin("ns/a")
	s.setTombstone("ns/a", "last state")
	s.markFinalized("ns/a", uid)
	s.end("ns/a", uid, "", 1, false)
	s.forget("ns/a") // the tombstone's reconciliation
	if n := marks(s); n != 0 {
		t.Errorf("%d marks after the tombstone was reconciled, want none", n)
	}

	// The delete event forgot the key during the reconciliation (it was
	// released): nothing is marked.
	s.begin("ns/b")
	s.forget("ns/b")
	s.markFinalized("ns/b", uid)
	if n := marks(s); n != 0 {
		t.Errorf("%d marks after a forgotten key's finalizer patch, want none", n)
	}

	// The cache dropped the object before its delete event came.
	s.begin("ns/c")
	s.markFinalized("ns/c", uid)
	s.end("ns/c", uid, "", 1, false)
	s.forgetUncached("ns/c")
	if !s.finalized("ns/c", uid) {
		t.Error("the delete event after the cache dropped the object found no mark")
	}
	if n := marks(s); n != 0 {
		t.Errorf("%d marks after the delete event, want none", n)
	}
}

// TestWriteExpectationEndsAtNewerVersion: a watch restarted by a relist can
// skip the written resourceVersion, the cache jumping to a newer one of the
// object (same generation). The cache then shows the write: the expectation
// ends, whether the newer version comes before the check (stale), as an
// event (observed), or during the reconciliation that wrote (end). A
// resourceVersion that is not an integer (an aggregated API server's) ends
// it only when it is the written one.
func TestWriteExpectationEndsAtNewerVersion(t *testing.T) {
	const ttl = 10 * time.Second
	s := newObjectState()

	s.begin("ns/a")
	s.end("ns/a", "uid", "7", 1, true)
	if stale, _ := s.stale("ns/a", "uid", "9", 1, ttl); stale {
		t.Error("the cache at 9 is stale, although it is newer than the write (7)")
	}
	if stale, _ := s.stale("ns/a", "uid", "6", 1, ttl); stale {
		t.Error("the expectation outlived the check that ended it")
	}

	s.begin("ns/a")
	s.end("ns/a", "uid", "9", 1, true)
	if stale, _ := s.stale("ns/a", "uid", "8", 1, ttl); !stale {
		t.Error("the cache at 8 is not stale, although the write is 9")
	}
	if !s.observed("ns/a", "10") {
		t.Error("an event newer than the write (9) did not end the deferred wait")
	}
	if stale, _ := s.stale("ns/a", "uid", "10", 1, ttl); stale {
		t.Error("stale after the cache showed a version newer than the write")
	}

	// A longer number is newer: no comparison of strings.
	s.begin("ns/a")
	s.end("ns/a", "uid", "99", 1, true)
	if stale, _ := s.stale("ns/a", "uid", "100", 1, ttl); stale {
		t.Error("the cache at 100 is stale, although it is newer than the write (99)")
	}

	// The newer version came while the writing reconciliation ran.
	s.begin("ns/a")
	s.observed("ns/a", "12")
	s.end("ns/a", "uid", "11", 1, true)
	if stale, _ := s.stale("ns/a", "uid", "12", 1, ttl); stale {
		t.Error("the cache at 12, delivered during the reconciliation that wrote 11, is stale")
	}

	// Not integers: only the written version ends it.
	s.begin("ns/b")
	s.end("ns/b", "uid", "b7", 1, true)
	if stale, _ := s.stale("ns/b", "uid", "b9", 1, ttl); !stale {
		t.Error("a resourceVersion that is not an integer was taken as newer")
	}
	if s.observed("ns/b", "9") {
		t.Error("an integer resourceVersion ended the wait for one that is not")
	}
	if !s.observed("ns/b", "b7") {
		t.Error("the written resourceVersion did not end the wait")
	}
	if len(s.objects) != 0 {
		t.Errorf("entries after every expectation ended: %v, want none", s.objects)
	}
}

// TestObjectEntrySize: the Framework keeps an objectEntry for every object
// it reconciled, at rest too (the resource set that handled it last), so
// its size is memory per object: it stays within the allocator's size
// class of 80 bytes (the next is 96). A field added to it (rather than to
// its rare part), or a flag between two of its fields, fails here.
func TestObjectEntrySize(t *testing.T) {
	if n := unsafe.Sizeof(objectEntry{}); n > 80 {
		t.Errorf("objectEntry is %d bytes, want at most 80", n)
	}
}

// TestOwnsNoFieldsEndsWithRelease: what the Framework knows of the status
// fields its manager owns on an object ends when it releases the object:
// its next owner may apply some under the same manager.
func TestOwnsNoFieldsEndsWithRelease(t *testing.T) {
	s := newObjectState()
	if !s.begin("ns/a") {
		t.Fatal("begin refused")
	}
	s.setFailed("ns/a") // keeps the entry, after reclaim too
	s.setOwnsNoFields("ns/a", true)
	s.end("ns/a", "u", "1", 1, false)
	if !s.ownsNoFields("ns/a") {
		t.Fatal("ownsNoFields = false after setOwnsNoFields(true)")
	}
	if idle := s.release("ns/a"); idle != nil {
		t.Fatal("release waits for a reconciliation that ended")
	}
	if s.ownsNoFields("ns/a") {
		t.Error("ownsNoFields = true after release, want not known")
	}
	s.setOwnsNoFields("ns/a", true) // an answer that came after it
	if !s.reclaim("ns/a") || s.objects["ns/a"] == nil {
		t.Fatal("reclaim dropped the entry or found no release")
	}
	if s.ownsNoFields("ns/a") {
		t.Error("ownsNoFields = true after a release and reclaim, want not known")
	}
	s.forget("ns/a")
	s.setOwnsNoFields("ns/a", true)
	if s.ownsNoFields("ns/a") {
		t.Error("ownsNoFields = true for a forgotten key, want not known")
	}
}
