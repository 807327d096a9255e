package framework

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// TestReleaseWaitsForTheReconciliationInFlight: Release returns only after
// the running reconciliation ended; afterwards neither updates nor Enqueue
// start one, the object leaving the informer does not run its delete chain,
// and Reclaim gives the object back.
func TestReleaseWaitsForTheReconciliationInFlight(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered, so it runs after Boot has stopped
	var running, calls atomic.Int64
	unblock := make(chan struct{})
	r := &funcResource{name: "slow", create: func(ctx context.Context, obj any) error {
		running.Add(1)
		defer running.Add(-1)
		if calls.Add(1) == 1 {
			<-unblock
		}
		return nil
	}}
	deletes := &deleteCounter{n: &atomic.Int64{}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r, deletes), DisableFinalizers: true, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "first reconciliation running", func() bool { return running.Load() == 1 })

	// skips counts the reconciliations of ns/a skipped so far: a run of
	// them is folded into one trace.
	skips := func() int {
		n := 0
		for _, tr := range f.Traces("ns/a") {
			if tr.Result == ResultSkipped {
				n += 1 + tr.Repeats
			}
		}
		return n
	}

	released := make(chan error, 1)
	go func() { released <- f.Release(context.Background(), "ns/a") }()
	select {
	case err := <-released:
		t.Fatalf("Release returned %v while a reconciliation was running", err)
	case <-time.After(50 * time.Millisecond): // a check that it does not return early, not a wait for a condition
	}
	if err := inf.Update(object("a", 2, nil)); err != nil {
		t.Fatal(err)
	}
	close(unblock)
	if err := <-released; err != nil {
		t.Fatalf("Release() = %v", err)
	}
	if running.Load() != 0 {
		t.Fatal("Release returned while the reconciliation was still running")
	}
	// The update and Enqueue are skipped: the skipped reconciliations are
	// traced, the resource is not called. The update's reconciliation was
	// queued once (its event and the superseded chain's requeue came while
	// the first one ran); only after it was traced is nothing queued, and
	// the Enqueue makes exactly one more. (A test that went on while a
	// reconciliation of the Enqueue was still queued saw it run once the
	// object had left and come back, one call too many.)
	pollUntil(t, "the update's reconciliation skipped", func() bool { return skips() == 1 })
	f.Enqueue("ns/a")
	pollUntil(t, "the Enqueue's reconciliation skipped", func() bool { return skips() == 2 })
	if got := calls.Load(); got != 1 {
		t.Errorf("resource calls after Release = %d, want 1 (the one in flight)", got)
	}

	// The object leaves the informer (its shard label was removed): no
	// delete chain, and the key is forgotten.
	if err := inf.Delete(object("a", 2, nil)); err != nil {
		t.Fatal(err)
	}
	if f.state.isReleased("ns/a") {
		t.Error("key still released after its object left the informer")
	}
	// It comes back: reconciled again.
	if err := inf.Add(object("a", 3, nil)); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "reconciled after coming back", func() bool { return calls.Load() == 2 })
	if n := deletes.n.Load(); n != 0 {
		t.Errorf("delete chain ran %d times for an object that was only released", n)
	}

	// Reclaim without the object leaving.
	if err := f.Release(context.Background(), "ns/a"); err != nil {
		t.Fatal(err)
	}
	// The Enqueue's reconciliation is skipped before Reclaim: one that a
	// worker took up only after Reclaim would run besides Reclaim's own.
	f.Enqueue("ns/a")
	pollUntil(t, "the Enqueue's reconciliation skipped", func() bool { return skips() == 3 })
	f.Reclaim("ns/a")
	pollUntil(t, "reconciled after Reclaim", func() bool { return calls.Load() == 3 })
}

// TestReleaseEndsWithItsContext: a Release that waits for a hung
// reconciliation returns ctx's error, and the key stays released.
func TestReleaseEndsWithItsContext(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	// The reconciliation hangs until the test ends, not for a time: one
	// that ended on a timeout of its own before Release looked would make
	// Release return nil at once.
	started, unblock := make(chan struct{}), make(chan struct{})
	r := &funcResource{name: "hang", create: func(ctx context.Context, obj any) error {
		close(started)
		<-unblock
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	t.Cleanup(func() { close(unblock) }) // before boot's cleanup waits for Boot
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := f.Release(ctx, "ns/a"); err != context.DeadlineExceeded {
		t.Errorf("Release() = %v, want %v", err, context.DeadlineExceeded)
	}
	if !f.state.isReleased("ns/a") {
		t.Error("key not released after Release gave up waiting")
	}
}

// TestAbortEndsReconciliationsInFlight: Abort ends the context of a
// reconciliation in flight at once, long before its ReconcileTimeout, and
// also one that only polls ctx.Err.
func TestAbortEndsReconciliationsInFlight(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var waiting, polling atomic.Int64
	ended := make(chan error, 2)
	r := &funcResource{name: "hang", create: func(ctx context.Context, obj any) error {
		if obj.(interface{ GetName() string }).GetName() == "poll" {
			polling.Add(1)
			for ctx.Err() == nil {
				time.Sleep(time.Millisecond)
			}
		} else {
			waiting.Add(1)
			<-ctx.Done()
		}
		ended <- ctx.Err()
		return ctx.Err()
	}}
	f, err := New(Config{Name: "op", Informer: informertest.New(object("wait", 1, nil), object("poll", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, Workers: 2, ReconcileTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	f.Abort() // before Boot: nothing to do
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }()
	pollUntil(t, "both reconciliations running", func() bool { return waiting.Load() == 1 && polling.Load() == 1 })
	cancel() // Boot's context alone lets them run on
	select {
	case err := <-ended:
		t.Fatalf("a reconciliation ended (%v) when Boot's context ended: want it to run on until Abort", err)
	case <-time.After(20 * time.Millisecond): // a check that nothing happens, not a wait for a condition
	}
	f.Abort()
	for range 2 {
		if err := <-ended; err != context.Canceled {
			t.Errorf("reconciliation ended with %v, want %v", err, context.Canceled)
		}
	}
	if err := <-done; err != nil {
		t.Errorf("Boot() = %v", err)
	}
}

// gatedInformer is an informertest.Informer whose next Get, once armed,
// reports that it read the object and then holds its caller until told to
// go on.
type gatedInformer struct {
	*informertest.Informer
	gate atomic.Pointer[getGate]
}

type getGate struct{ read, proceed chan struct{} }

func (i *gatedInformer) arm() (read <-chan struct{}, proceed chan<- struct{}) {
	g := &getGate{read: make(chan struct{}), proceed: make(chan struct{})}
	i.gate.Store(g)
	return g.read, g.proceed
}

func (i *gatedInformer) Get(key string) (any, bool, error) {
	obj, exists, err := i.Informer.Get(key)
	if g := i.gate.Swap(nil); g != nil {
		close(g.read)
		<-g.proceed
	}
	return obj, exists, err
}

// TestReleaseWaitsForAWorkerThatReadTheObject: a worker that read the
// object from the cache but had not started its resources yet is a
// reconciliation in flight too, and Release waits for it. Returning at once
// let the hand-over go on; the object's delete event (its shard label
// removed) forgot the release, and the worker then reconciled the object it
// had read, which belonged to another replica by then.
func TestReleaseWaitsForAWorkerThatReadTheObject(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var calls, late atomic.Int64
	var released atomic.Bool
	r := &funcResource{name: "r", create: func(ctx context.Context, obj any) error {
		if released.Load() {
			late.Add(1)
		}
		calls.Add(1)
		return nil
	}}
	inf := &gatedInformer{Informer: informertest.New(object("a", 1, nil))}
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	// Traced: the first reconciliation reads the cache no more.
	pollUntil(t, "first reconciliation traced", func() bool { return len(f.Traces("ns/a")) == 1 })

	read, proceed := inf.arm()
	f.Enqueue("ns/a")
	<-read // a worker holds the object it read
	done := make(chan error, 1)
	go func() {
		err := f.Release(context.Background(), "ns/a")
		released.Store(true)
		done <- err
	}()
	select {
	case err := <-done:
		// Release did not wait for the worker: the hand-over goes on, and
		// the object leaves the informer.
		if err != nil {
			t.Fatalf("Release() = %v", err)
		}
		if err := inf.Delete(object("a", 1, nil)); err != nil {
			t.Fatal(err)
		}
		close(proceed)
	case <-time.After(100 * time.Millisecond): // a check that Release waits, not a wait for a condition
		close(proceed)
		if err := <-done; err != nil {
			t.Fatalf("Release() = %v", err)
		}
	}
	pollUntil(t, "the worker's reconciliation", func() bool { return calls.Load() == 2 })
	if n := late.Load(); n != 0 {
		t.Errorf("%d reconciliations started after Release returned", n)
	}
}
