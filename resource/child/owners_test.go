package child

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"
)

// cm is a ConfigMap ns/name with the label LabelManagedBy=managedBy (none
// when managedBy is "") and a controller reference to owner (none when
// owner is "").
func cm(name, managedBy string, owner types.UID) *corev1.ConfigMap {
	c := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if managedBy != "" {
		c.Labels = map[string]string{LabelManagedBy: managedBy, "other": "x"}
	}
	if owner != "" {
		c.OwnerReferences = []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "Secret", Name: "not-controller", UID: "not-controller"},
			{APIVersion: "v1", Kind: "Secret", Name: string(owner), UID: owner, Controller: new(true)},
		}
	}
	return c
}

// names returns the sorted names of owner's children in x.
func names(t *testing.T, x *ownerIndex, owner types.UID) []string {
	t.Helper()
	one, more, complete := x.children(owner)
	if !complete {
		t.Fatal("index not complete")
	}
	var out []string
	if one != nil {
		out = append(out, one.GetName())
	}
	for _, m := range more {
		out = append(out, m.GetName())
	}
	slices.Sort(out)
	return out
}

// TestOwnerIndexEvents feeds the index's handler the events an informer
// delivers (an update with the object the store held before) and checks
// what each owner's children are after each.
func TestOwnerIndexEvents(t *testing.T) {
	x := newEmptyOwnerIndex("op")
	x.synced = func() bool { return true }
	store := map[string]*corev1.ConfigMap{}
	put := func(obj *corev1.ConfigMap) {
		if old, ok := store[obj.Name]; ok {
			x.onUpdate(old, obj)
		} else {
			x.onAdd(obj)
		}
		store[obj.Name] = obj
	}
	del := func(name string, unknown bool) {
		var obj any = store[name]
		if unknown {
			obj = cache.DeletedFinalStateUnknown{Key: "ns/" + name, Obj: store[name]}
		}
		x.onDelete(obj)
		delete(store, name)
	}
	steps := []struct {
		what string
		do   func()
		want map[types.UID][]string
	}{
		{"add a, b, c to A", func() { put(cm("a", "op", "A")); put(cm("b", "op", "A")); put(cm("c", "op", "A")) },
			map[types.UID][]string{"A": {"a", "b", "c"}, "B": nil}},
		{"not ours: other label, no label, no controller", func() {
			put(cm("d", "another", "A"))
			put(cm("e", "", "A"))
			put(cm("f", "op", ""))
		}, map[types.UID][]string{"A": {"a", "b", "c"}}},
		{"update a (same owner)", func() { put(cm("a", "op", "A")) }, map[types.UID][]string{"A": {"a", "b", "c"}}},
		{"a (the first) moves to B", func() { put(cm("a", "op", "B")) }, map[types.UID][]string{"A": {"b", "c"}, "B": {"a"}}},
		{"b loses its label", func() { put(cm("b", "", "A")) }, map[types.UID][]string{"A": {"c"}, "B": {"a"}}},
		{"d gets our label", func() { put(cm("d", "op", "A")) }, map[types.UID][]string{"A": {"c", "d"}, "B": {"a"}}},
		{"e gets our label, f a controller", func() { put(cm("e", "op", "A")); put(cm("f", "op", "A")) },
			map[types.UID][]string{"A": {"c", "d", "e", "f"}, "B": {"a"}}},
		{"e (not the first) deleted", func() { del("e", false) }, map[types.UID][]string{"A": {"c", "d", "f"}, "B": {"a"}}},
		{"c deleted", func() { del("c", false) }, map[types.UID][]string{"A": {"d", "f"}, "B": {"a"}}},
		{"a deleted, state unknown", func() { del("a", true) }, map[types.UID][]string{"A": {"d", "f"}, "B": nil}},
		{"d loses its controller", func() { put(cm("d", "op", "")) }, map[types.UID][]string{"A": {"f"}}},
		{"f moves to B", func() { put(cm("f", "op", "B")) }, map[types.UID][]string{"A": nil, "B": {"f"}}},
		{"g deleted, its final state naming no owner", func() {
			put(cm("g", "op", "A"))
			x.onDelete(cm("g", "op", ""))
			delete(store, "g")
		}, map[types.UID][]string{"A": nil, "B": {"f"}}},
		{"everything deleted", func() {
			for name := range store {
				del(name, false)
			}
		}, map[types.UID][]string{"A": nil, "B": nil}},
	}
	for _, s := range steps {
		s.do()
		for owner, want := range s.want {
			if got := names(t, x, owner); !slices.Equal(got, want) {
				t.Fatalf("after %s: children of %s = %v, want %v", s.what, owner, got, want)
			}
		}
	}
	if len(x.first) != 0 || len(x.more) != 0 {
		t.Fatalf("empty index keeps entries: first %v, more %v", x.first, x.more)
	}
	// The newest object is the one returned.
	put(cm("n", "op", "A"))
	newer := cm("n", "op", "A")
	put(newer)
	if first, _, _ := x.children("A"); first != newer {
		t.Fatalf("children returned an older object than the last event's")
	}
}

// TestOwnerIndexFollowsInformer runs the index on a real client-go
// informer over an in-memory source, through random adds, updates and
// deletes, and checks after each batch that it finds for every owner what
// a scan of the informer's store finds.
func TestOwnerIndexFollowsInformer(t *testing.T) {
	defer goleak.VerifyNone(t)
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	inf := cache.NewSharedIndexInformer(src, &corev1.ConfigMap{}, 0, cache.Indexers{})
	x := newOwnerIndex(inf, "op")
	if x == nil {
		t.Fatal("newOwnerIndex returned nil on a new informer")
	}
	if _, _, complete := x.children("A"); complete {
		t.Fatal("index complete before the informer ran")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	// The informer lists what exists before it starts, then watches.
	src.Add(cm("pre", "op", "A"))
	go func() { defer close(done); inf.RunWithContext(ctx) }()

	owners := []types.UID{"A", "B", "C", ""}
	labels := []string{"op", "op", "op", "another", ""}
	rng := rand.New(rand.NewPCG(1, 2))
	exists := map[string]*corev1.ConfigMap{"pre": cm("pre", "op", "A")}
	scan := func(owner types.UID) []string {
		var out []string
		for _, obj := range inf.GetStore().List() {
			m := obj.(metav1.Object)
			if ref := metav1.GetControllerOf(m); ref != nil && ref.UID == owner && m.GetLabels()[LabelManagedBy] == "op" {
				out = append(out, m.GetName())
			}
		}
		slices.Sort(out)
		return out
	}
	for batch := range 20 {
		for range 10 {
			name := fmt.Sprintf("cm-%d", rng.IntN(8))
			obj := cm(name, labels[rng.IntN(len(labels))], owners[rng.IntN(len(owners))])
			switch {
			case exists[name] == nil:
				src.Add(obj)
				exists[name] = obj
			case rng.IntN(3) == 0:
				// As the API server does: the delete carries the
				// object's last state.
				src.Delete(exists[name].DeepCopy()) // the source sets its resourceVersion
				delete(exists, name)
			default:
				src.Modify(obj)
				exists[name] = obj
			}
		}
		err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			if len(inf.GetStore().List()) != len(exists) {
				return false, nil
			}
			for _, o := range owners[:3] {
				if _, _, complete := x.children(o); !complete || !slices.Equal(names(t, x, o), scan(o)) {
					return false, nil
				}
			}
			return true, nil
		})
		if err != nil {
			for _, o := range owners[:3] {
				t.Logf("owner %s: index %v, store %v", o, names(t, x, o), scan(o))
			}
			t.Fatalf("batch %d: the index does not match the informer's store: %v", batch, err)
		}
	}
}
