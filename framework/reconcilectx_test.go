package framework

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
	"unsafe"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/updatenecessarycontext"
	"github.com/operatorkit/operatorkit/trace"
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
		case <-time.After(30 * time.Second):
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
			case <-time.After(30 * time.Second):
				t.Fatal("child not canceled with its parent")
			}
		}
	})
}

// TestReconcileContextValues checks that a reconciliation context answers
// for the reconciliation's signals, trace and conditions itself, before and
// after its inner context is made, and through contexts derived from it,
// and that the signals are fresh: none of the parent's show through.
func TestReconcileContextValues(t *testing.T) {
	parent := requeuecontext.NewContext(context.WithValue(context.Background(), ctxKey{}, "v"))
	requeuecontext.SetRequeueAfter(parent, time.Minute)
	c := newReconcileContext(parent, time.Now().Add(time.Hour))
	defer c.stop()
	if _, ok := requeuecontext.RequeueAfter(c); ok {
		t.Error("the parent's requeue signal shows through")
	}
	if trace.FromContext(c) != nil || conditioncontext.List(c) != nil {
		t.Error("a trace or conditions before begin")
	}
	tr := trace.New("ns/a", time.Now())
	var st statusRun
	st.conds.Init([]metav1.Condition{{Type: "Old", Status: metav1.ConditionTrue}}, nil)
	c.begin(tr, nil, nil, &st)

	check := func(name string, ctx context.Context) {
		t.Helper()
		if got := trace.FromContext(ctx); got != tr {
			t.Errorf("%s: trace = %p, want %p", name, got, tr)
		}
		if got := ctx.Value(ctxKey{}); got != "v" {
			t.Errorf("%s: the parent's value = %v, want v", name, got)
		}
		if _, ok := conditioncontext.Get(ctx, "Old"); !ok {
			t.Errorf("%s: the object's condition Old is not there", name)
		}
	}
	check("before Done", c)
	requeuecontext.SetRequeueAfter(c, time.Second)
	updatenecessarycontext.SetUpdateNecessary(c)
	conditioncontext.Set(c, "Mine", metav1.ConditionTrue, "Because", "")
	_ = c.Done() // makes the inner context
	child, cancel := context.WithCancel(c)
	defer cancel()
	for name, ctx := range map[string]context.Context{"after Done": c, "derived": child} {
		check(name, ctx)
		if d, ok := requeuecontext.RequeueAfter(ctx); !ok || d != time.Second {
			t.Errorf("%s: requeue = %v, %v, want 1s set in the reconciliation", name, d, ok)
		}
		if !updatenecessarycontext.IsUpdateNecessary(ctx) {
			t.Errorf("%s: the update-necessary signal set in the reconciliation is not there", name)
		}
		if l := conditioncontext.List(ctx); len(l) != 1 || l[0].Type != "Mine" {
			t.Errorf("%s: conditions set = %v, want Mine", name, l)
		}
	}
}

// TestReconcileContextSize: every reconciliation allocates its context, so
// its size is what a no-op costs: it stays within the allocator's size
// class of 160 bytes (the next is 176). A field added to it, or to the
// signals it holds (signal.Signals), fails here rather than only in a
// benchmark's B/op.
func TestReconcileContextSize(t *testing.T) {
	if n := unsafe.Sizeof(reconcileContext{}); n > 160 {
		t.Errorf("reconcileContext is %d bytes, want at most 160", n)
	}
}
