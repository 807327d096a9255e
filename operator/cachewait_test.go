package operator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// TestWaitForCachesEndsOnTheFirstFailure: Run and Plan wait for every
// cache at once, so a cache that fails by itself (its list refused for
// good) ends the wait, even behind one still waiting; they waited for the
// caches one by one, so a cache that never synced held up the failure of
// the next for CacheSyncTimeout. When the context ends, the first cache in
// order is named, as before.
func TestWaitForCachesEndsOnTheFirstFailure(t *testing.T) {
	waiting := func(ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("not synced: %w", context.Cause(ctx))
	}
	refused := errors.New("refused for good")
	waits := []cacheWait{
		{name: "a", wait: waiting},
		{name: "b", wait: func(context.Context) error { return refused }},
		{name: "c", wait: waiting},
	}
	done := make(chan error, 1)
	go func() { done <- waitForCaches(context.Background(), waits) }()
	select {
	case err := <-done:
		if !errors.Is(err, refused) || err.Error() != "cache of b: refused for good" {
			t.Fatalf("waitForCaches() = %v, want the refused cache b", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("waitForCaches did not return within 30 s of a failed cache")
	}

	timedOut := errors.New("not synced within CacheSyncTimeout")
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(timedOut)
	err := waitForCaches(ctx, []cacheWait{{name: "a", wait: waiting}, {name: "c", wait: waiting}})
	if !errors.Is(err, timedOut) || err.Error() != "cache of a: not synced: not synced within CacheSyncTimeout" {
		t.Fatalf("waitForCaches(ended context) = %v, want the first cache, a", err)
	}
	if err := waitForCaches(context.Background(), []cacheWait{{name: "a", wait: func(context.Context) error { return nil }}}); err != nil {
		t.Fatalf("waitForCaches(synced) = %v", err)
	}
}
