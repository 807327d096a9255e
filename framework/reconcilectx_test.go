package framework

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

type ctxKey struct{}

func TestReconcileContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.WithValue(context.Background(), ctxKey{}, "v"))
	defer cancelParent()
	detached := context.WithoutCancel(parent)

	t.Run("values, not the parent's cancellation", func(t *testing.T) {
		c := newReconcileContext(detached, time.Now().Add(time.Hour))
		defer c.stop()
		cancelParent()
		if got := c.Value(ctxKey{}); got != "v" {
			t.Errorf("Value = %v, want v", got)
		}
		if err := c.Err(); err != nil {
			t.Errorf("Err after the parent ended = %v, want nil", err)
		}
		if c.inner.Load() != nil {
			t.Error("Err before the deadline made the timer")
		}
		select {
		case <-c.Done():
			t.Error("Done closed after the parent ended")
		default:
		}
		if d, ok := c.Deadline(); !ok || d.IsZero() {
			t.Errorf("Deadline = %v, %v", d, ok)
		}
	})

	t.Run("deadline ends Done and Err", func(t *testing.T) {
		c := newReconcileContext(detached, time.Now().Add(20*time.Millisecond))
		defer c.stop()
		select {
		case <-c.Done():
		case <-time.After(10 * time.Second):
			t.Fatal("Done not closed after the deadline")
		}
		if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err = %v, want DeadlineExceeded", err)
		}
	})

	t.Run("a passed deadline shows in Err without Done", func(t *testing.T) {
		c := newReconcileContext(detached, time.Now().Add(-time.Second))
		defer c.stop()
		if err := c.Err(); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Err = %v, want DeadlineExceeded", err)
		}
		select {
		case <-c.Done():
		default:
			t.Error("Err is set but Done is open")
		}
	})

	t.Run("stop cancels, before and after Done", func(t *testing.T) {
		early := newReconcileContext(detached, time.Now().Add(time.Hour))
		done := early.Done()
		early.stop()
		<-done
		if err := early.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err after stop = %v, want Canceled", err)
		}
		late := newReconcileContext(detached, time.Now().Add(time.Hour))
		late.stop()
		late.stop() // idempotent
		if err := late.Err(); !errors.Is(err, context.Canceled) {
			t.Errorf("Err after stop = %v, want Canceled", err)
		}
		<-late.Done()
	})

	t.Run("children attach without a goroutine and end with it", func(t *testing.T) {
		c := newReconcileContext(detached, time.Now().Add(time.Hour))
		before := runtime.NumGoroutine()
		var children []context.Context
		for range 50 {
			child, cancel := context.WithCancel(c)
			defer cancel()
			children = append(children, child)
		}
		// A goroutine per child would show as about 50 more.
		if n := runtime.NumGoroutine() - before; n > 10 {
			t.Errorf("%d goroutines more after 50 children", n)
		}
		c.stop()
		for _, child := range children {
			select {
			case <-child.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("child not canceled with its parent")
			}
		}
	})
}
