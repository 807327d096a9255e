package operator

import (
	"fmt"
	"testing"
)

func ringKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns-%d/object-%d", i%7, i)
	}
	return keys
}

func TestRingSpreadsKeysEvenly(t *testing.T) {
	if got := (ring{}).get("ns/a"); got != "" {
		t.Errorf("empty ring get = %q, want \"\"", got)
	}
	keys := ringKeys(30000)
	for n := 1; n <= 5; n++ {
		var members []string
		for i := range n {
			members = append(members, fmt.Sprintf("replica-%d", i))
		}
		r := newRing(members, DefaultVirtualNodes)
		count := map[string]int{}
		for _, k := range keys {
			count[r.get(k)]++
		}
		if len(count) != n {
			t.Fatalf("%d members: keys went to %d members", n, len(count))
		}
		fair := float64(len(keys)) / float64(n)
		for m, c := range count {
			if dev := float64(c)/fair - 1; dev > 0.15 || dev < -0.15 {
				t.Errorf("%d members: %s has %d keys, %.0f%% off the fair share %.0f", n, m, c, dev*100, fair)
			}
		}
	}
}

// TestRingMovesOnlyTheShareOfTheChangedMember: adding a fourth member moves
// about a quarter of the keys, all of them to the new member; removing it
// again moves them back and nothing else.
func TestRingMovesOnlyTheShareOfTheChangedMember(t *testing.T) {
	keys := ringKeys(30000)
	three := newRing([]string{"a", "b", "c"}, DefaultVirtualNodes)
	four := newRing([]string{"c", "a", "d", "b"}, DefaultVirtualNodes) // order does not matter
	moved := 0
	for _, k := range keys {
		before, after := three.get(k), four.get(k)
		if before == after {
			continue
		}
		moved++
		if after != "d" {
			t.Fatalf("key %s moved from %s to %s, want only moves to the new member d", k, before, after)
		}
	}
	if share := float64(moved) / float64(len(keys)); share < 0.20 || share > 0.30 {
		t.Errorf("adding a 4th member moved %.1f%% of the keys, want about 25%%", share*100)
	}
}

func TestShardOwnerIsTheAssignersRing(t *testing.T) {
	keys := ringKeys(1000)
	members := []string{"a", "b", "c"}
	r := newRing(members, DefaultVirtualNodes)
	got := ShardOwner(members, DefaultVirtualNodes, keys...)
	for _, k := range keys {
		if got[k] != r.get(k) {
			t.Fatalf("ShardOwner(%s) = %q, the assigner's ring says %q", k, got[k], r.get(k))
		}
	}
	if got := ShardOwner(nil, DefaultVirtualNodes, "ns/a"); got["ns/a"] != "" {
		t.Errorf("ShardOwner without members = %q, want \"\"", got["ns/a"])
	}
}
