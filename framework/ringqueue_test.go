package framework

import (
	"strconv"
	"testing"
)

// TestRingQueueFIFO: keys come out in the order they went in, across the
// ring's growth and its wrapping around, and an emptied ring that grew
// past maxIdleRing gives its room back.
func TestRingQueueFIFO(t *testing.T) {
	q := &ringQueue{}
	next, want := 0, 0
	push := func(n int) {
		for range n {
			q.Push(strconv.Itoa(next))
			next++
		}
	}
	pop := func(n int) {
		for range n {
			if got := q.Pop(); got != strconv.Itoa(want) {
				t.Fatalf("Pop() = %s, want %d", got, want)
			}
			want++
		}
	}
	// Wrap around a ring of 16, then grow it while it wraps.
	push(10)
	pop(7)
	push(12) // 15 held, wrapped
	push(5)  // grows to 32 from a wrapped ring
	if q.Len() != 20 {
		t.Fatalf("Len() = %d, want 20", q.Len())
	}
	pop(20)
	if q.Len() != 0 {
		t.Fatalf("Len() = %d after popping every key, want 0", q.Len())
	}
	push(3 * maxIdleRing)
	pop(3 * maxIdleRing)
	if q.buf != nil {
		t.Errorf("an emptied ring keeps room for %d keys, want none above %d", len(q.buf), maxIdleRing)
	}
	push(100)
	pop(100)
	if len(q.buf) == 0 || len(q.buf) > maxIdleRing {
		t.Errorf("an emptied ring of 100 keys keeps room for %d, want it kept (at most %d)", len(q.buf), maxIdleRing)
	}
	for i, k := range q.buf {
		if k != "" {
			t.Fatalf("the empty ring still holds key %q at %d", k, i)
		}
	}
}

// TestRingQueueSteadyAllocations: a steady stream of keys through a ring
// that has grown to hold them allocates nothing (client-go's default queue
// allocates a new array every few keys).
func TestRingQueueSteadyAllocations(t *testing.T) {
	q := &ringQueue{}
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = strconv.Itoa(i)
	}
	round := func() {
		for _, k := range keys {
			q.Push(k)
		}
		for range keys {
			q.Pop()
		}
	}
	round()
	if allocs := testing.AllocsPerRun(100, round); allocs != 0 {
		t.Errorf("a round of 1,000 keys allocates %.1f times, want 0", allocs)
	}
}
