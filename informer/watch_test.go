package informer

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

func recv(t *testing.T, ch <-chan watch.Event, wantType watch.EventType, wantName string) {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatalf("channel closed, want %s %s", wantType, wantName)
		}
		if got := ev.Object.(*unstructured.Unstructured).GetName(); ev.Type != wantType || got != wantName {
			t.Fatalf("event = %s %s, want %s %s", ev.Type, got, wantType, wantName)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no event, want %s %s", wantType, wantName)
	}
}

func waitClosed[T any](t *testing.T, ch <-chan T) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-deadline:
			t.Fatal("channel not closed")
		}
	}
}

func TestWatch(t *testing.T) {
	for _, beforeRun := range []bool{true, false} {
		t.Run(map[bool]string{true: "before run", false: "after run"}[beforeRun], func(t *testing.T) {
			client := newFakeClient(widget("ns", "a", nil))
			inf, err := New(Config{Client: client, GVR: widgets})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var deletes, updates <-chan watch.Event
			var errs <-chan error
			if beforeRun {
				deletes, updates, errs = inf.Watch(ctx)
			}
			start(t, inf, client)
			if !beforeRun {
				deletes, updates, errs = inf.Watch(ctx)
			}

			recv(t, updates, watch.Added, "a")
			ri := client.Resource(widgets).Namespace("ns")
			if _, err := ri.Create(ctx, widget("ns", "b", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			recv(t, updates, watch.Added, "b")
			if _, err := ri.Update(ctx, widget("ns", "b", map[string]string{"x": "y"}), metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
			recv(t, updates, watch.Modified, "b")
			if err := ri.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			recv(t, deletes, watch.Deleted, "a")

			cancel()
			waitClosed(t, updates)
			waitClosed(t, deletes)
			waitClosed(t, errs)
		})
	}
}

func TestWatchSlowConsumerBlocksNobody(t *testing.T) {
	client := newFakeClient(widget("ns", "a", nil), widget("ns", "b", nil))
	inf, err := New(Config{Client: client, GVR: widgets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	_, updates, _ := inf.Watch(ctx) // never read until cancel
	other := &recorder{}
	if _, err := inf.AddEventHandler(other); err != nil {
		t.Fatal(err)
	}
	start(t, inf, client)
	if _, err := client.Resource(widgets).Namespace("ns").Create(ctx, widget("ns", "c", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other.waitFor(t, "initial a", "initial b", "add c")
	if _, exists, _ := inf.Get("ns/c"); !exists {
		t.Error("cache did not get ns/c while a Watch consumer was stuck")
	}
	cancel() // unblocks the pending send; the channels close
	waitClosed(t, updates)
}

func TestWatchConsumerThatNeverReadsDoesNotBlockRun(t *testing.T) {
	client := newFakeClient(widget("ns", "a", nil), widget("ns", "b", nil))
	inf, err := New(Config{Client: client, GVR: widgets})
	if err != nil {
		t.Fatal(err)
	}
	deletes, updates, errs := inf.Watch(context.Background()) // never cancelled, never read
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run() = %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run() blocked by a Watch consumer that does not read")
	}
	waitClosed(t, updates)
	waitClosed(t, deletes)
	waitClosed(t, errs)
}

func TestWatchAfterStop(t *testing.T) {
	client := newFakeClient()
	inf, err := New(Config{Client: client, GVR: widgets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := inf.Run(ctx); err != nil {
		t.Fatal(err)
	}
	deletes, updates, errs := inf.Watch(context.Background())
	select {
	case err, ok := <-errs:
		if !ok || err == nil {
			t.Fatal("Watch after stop: no error on errChan")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Watch after stop: no error")
	}
	waitClosed(t, errs)
	waitClosed(t, updates)
	waitClosed(t, deletes)
}

func TestWatchNeverRun(t *testing.T) {
	inf, err := New(Config{Client: newFakeClient(), GVR: widgets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	deletes, updates, errs := inf.Watch(ctx)
	cancel()
	waitClosed(t, updates)
	waitClosed(t, deletes)
	waitClosed(t, errs)
}

func TestWatcherUnwrapsTombstones(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	w := &watcher{ctx: ctx, deletes: make(chan watch.Event, 1), updates: make(chan watch.Event, 1), errs: make(chan error, 1)}
	w.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: widget("ns", "a", nil)})
	recv(t, w.deletes, watch.Deleted, "a")
	w.close()
	w.close()                              // idempotent
	w.OnAdd(widget("ns", "b", nil), false) // after close: dropped, no panic
	w.sendError(context.Canceled)
}
