package informertest

import (
	"context"
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer"
)

var _ informer.Interface = (*Informer)(nil)

// Informer is an in-memory informer.Interface. Create it with New; it is
// safe for concurrent use.
type Informer struct {
	mu       sync.Mutex
	store    cache.Store
	handlers []*registration
	started  bool
	synced   chan struct{}
}

// New returns a fake informer whose store holds objs (each must satisfy
// meta.Accessor). It is not synced until Run is called or SetSynced.
func New(objs ...runtime.Object) *Informer {
	i := &Informer{
		store:  cache.NewStore(cache.DeletionHandlingMetaNamespaceKeyFunc),
		synced: make(chan struct{}),
	}
	for _, o := range objs {
		if err := i.store.Add(o); err != nil {
			panic(fmt.Sprintf("informertest.New: %v", err))
		}
	}
	return i
}

// Run marks the informer synced and blocks until ctx ends; it returns nil
// then. A second call returns informer.ErrAlreadyStarted, as the real
// informer does.
func (i *Informer) Run(ctx context.Context) error {
	i.mu.Lock()
	if i.started {
		i.mu.Unlock()
		return informer.ErrAlreadyStarted
	}
	i.started = true
	i.mu.Unlock()
	i.SetSynced()
	<-ctx.Done()
	return nil
}

// SetSynced marks the informer synced without running it. It is idempotent.
func (i *Informer) SetSynced() {
	i.mu.Lock()
	defer i.mu.Unlock()
	select {
	case <-i.synced:
	default:
		close(i.synced)
	}
}

// HasSynced reports whether Run or SetSynced was called.
func (i *Informer) HasSynced() bool {
	select {
	case <-i.synced:
		return true
	default:
		return false
	}
}

// WaitForCacheSync blocks until the informer is synced, or returns an error
// wrapping informer.ErrNotSynced when ctx ends first.
func (i *Informer) WaitForCacheSync(ctx context.Context) error {
	select {
	case <-i.synced:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", informer.ErrNotSynced, context.Cause(ctx))
	}
}

// Get returns the stored object with the key "namespace/name".
func (i *Informer) Get(key string) (obj any, exists bool, err error) {
	return i.store.GetByKey(key)
}

// List returns every stored object.
func (i *Informer) List() []any { return i.store.List() }

// AddEventHandler registers h and, before returning, calls h.OnAdd for every
// stored object (with isInInitialList true). The registration's HasSynced
// follows the informer's.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	r := &registration{handler: h, informer: i}
	i.mu.Lock()
	i.handlers = append(i.handlers, r)
	i.mu.Unlock()
	for _, obj := range i.store.List() {
		h.OnAdd(obj, true)
	}
	return r, nil
}

// RemoveEventHandler unregisters the handler of reg. It is idempotent.
func (i *Informer) RemoveEventHandler(reg cache.ResourceEventHandlerRegistration) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	for n, r := range i.handlers {
		if r == reg {
			i.handlers = append(i.handlers[:n:n], i.handlers[n+1:]...)
			break
		}
	}
	return nil
}

// Add stores obj and calls OnAdd(obj, false) on every handler. If an object
// with the same key is stored already it is replaced, and handlers still get
// an add.
func (i *Informer) Add(obj runtime.Object) error {
	if err := i.store.Add(obj); err != nil {
		return err
	}
	for _, h := range i.snapshot() {
		h.OnAdd(obj, false)
	}
	return nil
}

// Update stores obj and calls OnUpdate(old, obj) on every handler, where
// old is the object stored before under the same key. It returns an error
// if there was none.
func (i *Informer) Update(obj runtime.Object) error {
	old, exists, err := i.store.Get(obj)
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("informertest: update of an object not in the store: %T", obj)
	}
	if err := i.store.Update(obj); err != nil {
		return err
	}
	for _, h := range i.snapshot() {
		h.OnUpdate(old, obj)
	}
	return nil
}

// Delete removes obj from the store and calls OnDelete(obj) on every
// handler. Deleting an object that is not stored is not an error.
func (i *Informer) Delete(obj runtime.Object) error {
	if err := i.store.Delete(obj); err != nil {
		return err
	}
	for _, h := range i.snapshot() {
		h.OnDelete(obj)
	}
	return nil
}

// DeleteTombstone removes obj from the store and calls OnDelete with a
// cache.DeletedFinalStateUnknown holding obj, as the real informer does when
// it missed the delete itself.
func (i *Informer) DeleteTombstone(obj runtime.Object) error {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return err
	}
	if err := i.store.Delete(obj); err != nil {
		return err
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: key, Obj: obj}
	for _, h := range i.snapshot() {
		h.OnDelete(tombstone)
	}
	return nil
}

func (i *Informer) snapshot() []cache.ResourceEventHandler {
	i.mu.Lock()
	defer i.mu.Unlock()
	hs := make([]cache.ResourceEventHandler, len(i.handlers))
	for n, r := range i.handlers {
		hs[n] = r.handler
	}
	return hs
}

// registration is the fake's cache.ResourceEventHandlerRegistration.
type registration struct {
	handler  cache.ResourceEventHandler
	informer *Informer
}

func (r *registration) HasSynced() bool { return r.informer.HasSynced() }

func (r *registration) HasSyncedChecker() cache.DoneChecker { return doneChecker{r.informer} }

type doneChecker struct{ i *Informer }

func (d doneChecker) Name() string          { return "informertest" }
func (d doneChecker) Done() <-chan struct{} { return d.i.synced }
