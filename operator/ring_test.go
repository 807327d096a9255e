package operator

import (
	"fmt"
	"maps"
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
	// 0 means the default, as in Sharding.VirtualNodes; less is taken as
	// 0 rather than a panic.
	for _, vn := range []int{0, -1} {
		if got := ShardOwner(members, vn, keys[:50]...); !maps.Equal(got, ShardOwner(members, DefaultVirtualNodes, keys[:50]...)) {
			t.Errorf("ShardOwner(virtualNodes %d) differs from DefaultVirtualNodes's", vn)
		}
	}
}

// TestAssignerDecides: what the assigner does to an object, given its
// labels and the live members.
func TestAssignerDecides(t *testing.T) {
	a := &assigner{s: &sharder{cfg: Sharding{VirtualNodes: DefaultVirtualNodes}}}
	a.members = []string{"r1", "r2"}
	a.ring = newRing(a.members, DefaultVirtualNodes)
	key := "ns/obj"
	owner := a.ring.get(key)
	other := "r1"
	if owner == "r1" {
		other = "r2"
	}
	obj := func(owner string, draining bool) objectState {
		return objectState{namespace: "ns", name: "obj", resourceVersion: "1", owner: owner, draining: draining}
	}
	for _, tc := range []struct {
		name string
		st   objectState
		want action
	}{
		{"free", obj("", false), label},
		{"free with a stale drain label", obj("", true), label},
		{"with its owner", obj(owner, false), keep},
		{"owner dead", obj("gone", false), label},
		{"owner dead while draining", obj("gone", true), label},
		{"live owner not the ring's", obj(other, false), drain},
		{"draining from a live owner", obj(other, true), keep},
		{"drained from the ring's owner", obj(owner, true), takeBack},
	} {
		if got := a.decide(tc.st); got != tc.want {
			t.Errorf("%s: decide = %d, want %d", tc.name, got, tc.want)
		}
	}
	a.members, a.ring = nil, ring{}
	if got := a.decide(obj("", false)); got != keep {
		t.Errorf("no live member: decide = %d, want keep", got)
	}
	a.s.cfg.ByNamespace = true
	a.members = []string{"r1", "r2"}
	a.ring = newRing(a.members, DefaultVirtualNodes)
	nsOwner := a.ring.get("ns")
	if got, _ := a.decideFor(obj("", false)); got != nsOwner {
		t.Errorf("ByNamespace: owner = %q, want the namespace's %q", got, nsOwner)
	}
}
