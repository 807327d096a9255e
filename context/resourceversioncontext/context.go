package resourceversioncontext

import (
	"context"
	"sync"
)

type key struct{}

type value struct {
	mu sync.Mutex
	rv string
}

// NewContext returns a child of ctx that can carry a resourceVersion. The
// Framework calls it for every reconciliation.
func NewContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, key{}, &value{})
}

// SetResourceVersion records rv as the resourceVersion the last write to the
// reconciled object returned. Empty rv and a ctx without the signal are
// ignored.
func SetResourceVersion(ctx context.Context, rv string) {
	v, ok := ctx.Value(key{}).(*value)
	if !ok || rv == "" {
		return
	}
	v.mu.Lock()
	v.rv = rv
	v.mu.Unlock()
}

// ResourceVersion returns the resourceVersion last set, and false when none
// was set or ctx has no signal.
func ResourceVersion(ctx context.Context) (string, bool) {
	v, ok := ctx.Value(key{}).(*value)
	if !ok {
		return "", false
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.rv, v.rv != ""
}
