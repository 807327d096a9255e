package informer

import (
	"context"

	"k8s.io/client-go/tools/cache"
)

// Interface is what a consumer such as the Framework needs from an informer.
// *Informer implements it, and informertest.Informer is an in-memory fake
// for unit tests. All methods may be called concurrently.
type Interface interface {
	// Run starts the informer and blocks until ctx ends; it returns nil then.
	// It is called once; a second call returns ErrAlreadyStarted.
	Run(ctx context.Context) error
	// HasSynced reports whether the cache has been filled by a complete
	// initial list. It never goes back to false.
	HasSynced() bool
	// WaitForCacheSync blocks until HasSynced is true, and returns an error
	// wrapping ErrNotSynced if ctx ends first, or at once when the cache
	// can never sync (*Informer: a list the API server refuses for good,
	// a Namespace given for a cluster-scoped resource).
	WaitForCacheSync(ctx context.Context) error
	// Get returns the cached object with the key "namespace/name" (just
	// "name" for cluster-scoped objects). exists is false when the cache has
	// no such object. The object belongs to the cache: never modify it; copy
	// it first.
	Get(key string) (obj any, exists bool, err error)
	// AddEventHandler registers h for add, update and delete notifications.
	// Handlers added before Run see the initial list as adds; handlers added
	// later get a synthetic add for every cached object first. The
	// registration tells whether h has seen the initial list.
	AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
}

var _ Interface = (*Informer)(nil)
