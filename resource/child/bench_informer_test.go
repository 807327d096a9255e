package child_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	fcache "k8s.io/client-go/tools/cache/testing"

	"github.com/operatorkit/operatorkit/resource/child"
)

// informerCache is a child.Cache over a client-go informer, as
// informer.Informer is one: Get and List from its store, and the informer
// itself, so that the resource indexes the children by owner.
type informerCache struct{ inf cache.SharedIndexInformer }

func (c informerCache) Get(key string) (any, bool, error) { return c.inf.GetStore().GetByKey(key) }
func (c informerCache) List() []any                       { return c.inf.GetStore().List() }
func (c informerCache) SharedIndexInformer() cache.SharedIndexInformer {
	return c.inf
}

// BenchmarkNoOpReconcileInformer is BenchmarkNoOpReconcile/child over a
// client-go informer holding the children of 1,000 owners, reconciled in
// turn as a resync does: the owner index and the cache reads with as
// many objects as bench/'s scenario, so that their memory is not all in
// the CPU's caches.
func BenchmarkNoOpReconcileInformer(b *testing.B) {
	const owners = 1000
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	ws := make([]*corev1.Secret, owners)
	for i := range ws {
		ws[i] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: fmt.Sprintf("web-%04d", i), UID: types.UID(fmt.Sprintf("uid-%04d", i))}}
		cm := benchConfigMap(ws[i])
		cm.Labels[child.LabelManagedBy] = "bench"
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: ws[i].Name, UID: ws[i].UID, Controller: new(true), BlockOwnerDeletion: new(true)}}
		cm.UID, cm.ResourceVersion = types.UID(fmt.Sprintf("cm-%04d", i)), "1"
		src.Add(cm)
	}
	inf := cache.NewSharedIndexInformer(src, &corev1.ConfigMap{}, 0, cache.Indexers{})
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       newFakeClient[corev1.ConfigMap]().For,
		Cache:        informerCache{inf},
		FieldManager: "bench",
		Desired: func(_ context.Context, w *corev1.Secret) (*corev1.ConfigMap, error) {
			return benchConfigMap(w), nil
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		b.Fatal("informer did not sync")
	}
	// Until the resource's handler has seen the list, it scans: wait until
	// a whole round is quick.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		start := time.Now()
		for _, w := range ws {
			if err := r.EnsureCreated(ctx, w); err != nil {
				return false, err
			}
		}
		return time.Since(start) < time.Duration(owners)*100*time.Microsecond, nil
	})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if err := r.EnsureCreated(ctx, ws[i%owners]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// TestDeleteRightAfterCreate: the owner index holds the answer of the
// resource's own create at once, so a delete chain that runs before the
// informer showed the child (here: never; its source is not the client)
// still deletes it; and a delete that finds the child gone drops it from
// the index, so that the next reconciliation does not delete it again.
func TestDeleteRightAfterCreate(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	inf := cache.NewSharedIndexInformer(src, &corev1.ConfigMap{}, 0, cache.Indexers{})
	client := newFakeClient[corev1.ConfigMap]()
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       client.For,
		Cache:        informerCache{inf},
		FieldManager: "test",
		Desired: func(_ context.Context, w *corev1.Secret) (*corev1.ConfigMap, error) {
			return benchConfigMap(w), nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	w := owner()
	// The resource's handler has synced once the informer has: until
	// then the resource scans the cache instead of using the index.
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return child.OwnerIndexSynced(r), nil
	})
	if err != nil {
		t.Fatal("the owner index did not sync")
	}
	if err := r.EnsureCreated(ctx, w); err != nil {
		t.Fatal(err)
	}
	if len(client.applies) != 1 {
		t.Fatalf("applies = %v, want the ConfigMap's create", client.applies)
	}
	gone := w.DeepCopy()
	now := metav1.Now()
	gone.DeletionTimestamp = &now
	if err := r.EnsureDeleted(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if len(client.deletes) != 1 {
		t.Fatalf("deletes = %v, want the ConfigMap the resource created an instant before", client.deletes)
	}
	// The index still holds the child: the informer never saw it come
	// or go. The next delete chain finds it gone (NotFound) and drops it;
	// the one after sends no delete.
	for range 2 {
		if err := r.EnsureDeleted(ctx, gone); err != nil {
			t.Fatal(err)
		}
	}
	if client.deleteCalls != 2 {
		t.Errorf("delete requests = %d, want 2 (the delete, then one that found the child gone)", client.deleteCalls)
	}
}

// TestNoOpReconcileAllocations: a reconciliation of an owner whose one
// child is in sync allocates, besides what Desired allocates, once (the
// cache key of the child): neither state is an allocation of its own (the
// state of one child is the child), as BenchmarkNoOpReconcileInformer
// reports; a change that adds one on this path fails here rather than only
// in a benchmark's figures.
func TestNoOpReconcileAllocations(t *testing.T) {
	src := fcache.NewFakeControllerSource()
	defer src.Shutdown()
	w := owner()
	cm := benchConfigMap(w)
	cm.Labels[child.LabelManagedBy] = "test"
	cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Secret", Name: w.Name, UID: w.UID, Controller: new(true), BlockOwnerDeletion: new(true)}}
	cm.UID, cm.ResourceVersion = "cm-uid", "1"
	src.Add(cm)
	inf := cache.NewSharedIndexInformer(src, &corev1.ConfigMap{}, 0, cache.Indexers{})
	// Desired returns one object, made once, so that the figure is the
	// resource's own: nothing is written, so nothing changes it.
	desired := benchConfigMap(w)
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       newFakeClient[corev1.ConfigMap]().For,
		Cache:        informerCache{inf},
		FieldManager: "test",
		Desired: func(context.Context, *corev1.Secret) (*corev1.ConfigMap, error) {
			return desired, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	defer func() { cancel(); <-done }()
	go func() { defer close(done); inf.RunWithContext(ctx) }()
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return child.OwnerIndexSynced(r), nil
	})
	if err != nil {
		t.Fatal("the owner index did not sync")
	}
	allocs := testing.AllocsPerRun(1000, func() {
		if err := r.EnsureCreated(ctx, w); err != nil {
			t.Fatal(err)
		}
	})
	if allocs > 1 {
		t.Errorf("a no-op reconciliation allocates %.2f times besides Desired, want at most 1", allocs)
	}
}
