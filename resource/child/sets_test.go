package child_test

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// TestResourcesOfTwoSetsSeeEachOthersWrites: an operator with a resource
// set per release has, per release, a child resource of one kind and one
// ManagedBy over one informer. When an owner moves from one release to
// another an instant after the first release's resource wrote a child
// (before the informer showed it), the second release's resource must find
// that child as the first one would: a child it does not desire is deleted
// (the move back to a release without the Service), and the owner's delete
// chain deletes it (a delete right after a move), also where no garbage
// collector runs. The informer's event of the write comes later and, being
// the operator's own write, wakes nobody: a resource that missed the child
// then missed it until a resync, or for ever once the owner was gone.
func TestResourcesOfTwoSetsSeeEachOthersWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		// second runs the second release's resource r on the owner w.
		second func(ctx context.Context, r *crud.Resource, w *corev1.Secret) error
		// desired is whether the second release desires the child.
		desired bool
	}{
		{name: "moved to a release without the child", desired: false, second: func(ctx context.Context, r *crud.Resource, w *corev1.Secret) error {
			return r.EnsureCreated(ctx, w)
		}},
		{name: "deleted right after a move", desired: true, second: func(ctx context.Context, r *crud.Resource, w *corev1.Secret) error {
			gone := w.DeepCopy()
			now := metav1.Now()
			gone.DeletionTimestamp = &now
			return r.EnsureDeleted(ctx, gone)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			server := newFakeClient[corev1.ConfigMap]()
			// The informer never delivers the create: the moment between
			// the write and its watch event, held.
			inf := &handCache{store: map[string]*corev1.ConfigMap{}}
			release := func(name string, desired bool, managedBy string) *crud.Resource {
				r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
					Name:         "configmap",
					Client:       server.For,
					Cache:        inf,
					FieldManager: "test",
					ManagedBy:    managedBy,
					Desired: func(_ context.Context, w *corev1.Secret) (*corev1.ConfigMap, error) {
						if !desired {
							return nil, nil
						}
						return benchConfigMap(w), nil
					},
				})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if !child.OwnerIndexSynced(r) {
					t.Fatalf("%s does not index its children by owner", name)
				}
				return r
			}
			first, second := release("release 1", true, ""), release("release 2", tc.desired, "")
			// Another claim (its own ManagedBy) over the same informer:
			// not a keeper of the ConfigMap.
			other := release("other", false, "other")
			ctx := reconcileCtx()
			w := owner()
			if err := first.EnsureCreated(ctx, w); err != nil {
				t.Fatal(err)
			}
			if len(server.applies) != 1 {
				t.Fatalf("applies = %v, want the ConfigMap's create", server.applies)
			}
			if err := other.EnsureCreated(ctx, w); err != nil {
				t.Fatal(err)
			}
			if len(server.deletes) != 0 {
				t.Fatalf("deletes = %v by a resource of another ManagedBy, want none", server.deletes)
			}
			if err := tc.second(ctx, second, w); err != nil {
				t.Fatal(err)
			}
			if len(server.deletes) != 1 {
				t.Errorf("deletes = %v, want the ConfigMap the other release's resource created an instant before: it stays, owned by the owner, and nothing reconciles it again", server.deletes)
			}
		})
	}
}

// TestClusterScopedOwnerChildMovedToAnotherNamespace: a cluster-scoped
// owner keeps namespaced children, which may be in any namespace. When
// DesiredSet names a child of the same name in another namespace instead,
// the child in the first namespace is no longer named and must be deleted;
// and children of one name in two namespaces are two children, not one
// named twice.
func TestClusterScopedOwnerChildMovedToAnotherNamespace(t *testing.T) {
	server := newFakeClient[corev1.ConfigMap]()
	inf := &handCache{store: map[string]*corev1.ConfigMap{}}
	namespaces := []string{"one"}
	r, err := child.New(child.Config[*corev1.Namespace, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       server.For,
		Cache:        inf,
		FieldManager: "test",
		DesiredSet: func(_ context.Context, w *corev1.Namespace) ([]*corev1.ConfigMap, error) {
			var out []*corev1.ConfigMap
			for _, ns := range namespaces {
				out = append(out, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Data: map[string]string{"a": "b"}})
			}
			return out, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := reconcileCtx()
	w := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant", UID: "tenant-uid"}}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	namespaces = []string{"two"}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	if want := []string{"one/web", "two/web"}; !slices.Equal(server.applies, want) {
		t.Fatalf("applies = %v, want %v", server.applies, want)
	}
	if want := []string{"one/web"}; !slices.Equal(server.deletes, want) {
		t.Errorf("deletes = %v, want %v: the child in namespace one is no longer desired", server.deletes, want)
	}
	namespaces = []string{"two", "three"}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Errorf("a set of web in namespaces two and three: %v, want no error", err)
	}
}
