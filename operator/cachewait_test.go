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
// the next for CacheSyncTimeout. When the context ends, every cache that
// did not sync is named, in order: the first alone (as before) hid the
// cause when another cache had it.
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
	if want := "cache of a: not synced: not synced within CacheSyncTimeout\ncache of c: not synced: not synced within CacheSyncTimeout"; !errors.Is(err, timedOut) || err.Error() != want {
		t.Fatalf("waitForCaches(ended context) = %q, want both caches, a and c: %q", err, want)
	}
	if err := waitForCaches(context.Background(), []cacheWait{{name: "a", wait: func(context.Context) error { return nil }}}); err != nil {
		t.Fatalf("waitForCaches(synced) = %v", err)
	}
}
