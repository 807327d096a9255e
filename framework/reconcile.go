package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/context/finalizerskeptcontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

// Results of one reconciliation, the "result" label of
// operatorkit_framework_reconciliations_total and Trace.Result.
const (
	ResultSuccess       = "success"
	ResultRequeue       = "requeue"        // success, and a resource asked for another run later
	ResultFinalizerKept = "finalizer_kept" // delete chain ran, a resource kept the finalizer
	ResultError         = "error"
	ResultPermanent     = "permanent_error" // not retried with backoff: run again when the object changes, or at the informer's resync
	ResultPanic         = "panic"
	ResultNoResourceSet = "no_resource_set"
	ResultSkipped       = "skipped" // nothing to do (gone, left the informer's selection, deleting without our finalizer, already finalized, or released)
	ResultDryRun        = "dry_run"
	// ResultConflict is a write that lost against a newer version of an
	// object (409): retried with backoff and the latest object, not
	// reported as a failure.
	ResultConflict = "conflict"
	// ResultStale is a reconciliation deferred because the cache does not
	// show the operator's own last write to the object yet; it runs when it
	// does (see resourceversioncontext), at the latest when the write's
	// expectation ends. Neither a success nor a failure: the object's
	// backoff stays as it was.
	ResultStale = "stale"
	// ResultSuperseded is a reconciliation stopped before its next resource
	// because the cache already held a newer generation of the object,
	// which is reconciled next (see Config.RunSuperseded).
	ResultSuperseded = "superseded"
)

// resultWaiting is the outcome of a key the queue gave back during the wait
// its object's last failure asked for (a requeue asked for before that
// wait): not a reconciliation, recorded nowhere, the key requeued after
// the rest of the wait.
const resultWaiting = "waiting"

// outcome is what one reconciliation tells the worker.
type outcome struct {
	result string
	err    error
	// requeueAfter is the delay a resource asked for (requeuecontext), or
	// for a failure (ResultError) the wait its error asked for
	// (retry.DelayOf): the object's backoff interval, when longer, wins.
	requeueAfter time.Duration
	rateLimited  bool // requeue with the object's backoff
	// gone is set for a deleted object whose delete chain is not retried:
	// finish forgets it.
	gone bool
	// resourceVersion is the version of the object the reconciliation
	// read from the cache; "" when it read none.
	resourceVersion string
	// errStep is the step whose failure ended the chain (stepOf), read
	// when the chain ended: the Framework's own steps after it (the status
	// write) can push it out of a trace at its limit (trace.KeptLast).
	// "" when the chain did not fail, or did not run.
	errStep string
}

// processNextItem takes one key off the queue and reconciles it. It returns
// false when the queue is shut down.
//
// detached is Boot's ctx without its cancellation (context.WithoutCancel),
// made once per worker: the parent of every reconciliation's context.
func (f *Framework) processNextItem(ctx, detached context.Context) bool {
	key, shutdown := f.queue.Get()
	if shutdown {
		return false
	}
	defer f.queue.Done(key)
	if ctx.Err() != nil {
		// Stopping: leave the key, which Boot's end takes out of the queue
		// (the object is level-based state in the API server, which the
		// next Framework's Boot reads again).
		return false
	}

	// An in-flight reconciliation finishes when Boot's ctx ends; it is
	// bounded by the reconcile timeout instead.
	rctx := newReconcileContext(detached, time.Now().Add(f.reconcileTimeout))
	o := f.reconcile(rctx, rctx, key)
	rctx.stop()

	f.requeue(key, o)
	return true
}

// requeue puts key back on the queue, or not, as the outcome o of its
// reconciliation calls for.
func (f *Framework) requeue(key string, o outcome) {
	switch {
	case o.result == resultWaiting:
		// The rest of the wait its object's last failure asked for.
		f.queue.AddAfter(key, o.requeueAfter)
	case o.result == ResultSuperseded || (o.result == ResultConflict && f.cacheMovedOn(key, o.resourceVersion)):
		// The cache already holds a newer version (the one that won the
		// conflict, or the newer generation): reconcile it now, without
		// backoff. Add coalesces with the event of that version if it is
		// still queued (or was dropped by an UpdatePredicate).
		f.queue.Forget(key)
		f.queue.Add(key)
	case o.result == ResultError && o.requeueAfter > 0:
		// Its error asked for a wait (retry.DelayOf): not before it, nor
		// before the object's backoff, which grows as for any failure
		// (When is what AddRateLimited asks the limiter). A resync
		// does not run it sooner (reconcile's waitFor).
		f.queue.AddAfter(key, max(f.limiter.When(key), o.requeueAfter))
	case o.result == ResultConflict:
		// The cache does not show the winner yet: the retry waits for it
		// when the conflict is on the object itself (awaitWinner).
		f.awaitWinner(key, o)
		f.queue.AddRateLimited(key)
	case o.result == ResultPanic || o.result == ResultError:
		f.queue.AddRateLimited(key)
	case o.rateLimited:
		f.queue.AddRateLimited(key)
	case o.result == ResultStale:
		// Deferred until the cache shows the object's last write: neither a
		// success nor a failure, so the object's backoff stays as it is (a
		// failing object whose retries find the cache behind must not start
		// its backoff over each time).
		f.queue.AddAfter(key, o.requeueAfter)
	default:
		f.queue.Forget(key)
		if o.requeueAfter > 0 {
			f.queue.AddAfter(key, o.requeueAfter)
		}
	}
}

// reconcile runs the resource chain once for key and records trace, metrics,
// logs and events. ctx is rctx, or a context derived from it; rctx carries
// the reconciliation's signals, trace and conditions.
func (f *Framework) reconcile(ctx context.Context, rctx *reconcileContext, key string) (o outcome) {
	start := time.Now()
	tr := trace.NewSized(key, start, f.traceSteps)
	tr.Limit(f.traceLimit)

	var obj any
	var rv string
	replaced := false // obj is the tombstone of an object another one replaced
	defer func() {
		if r := recover(); r != nil {
			o = outcome{result: ResultPanic, err: &PanicError{Resource: "framework", Value: r, Stack: debug.Stack()}}
		}
		if o.result == ResultError {
			// Not before the delay its error asks for, if any (retry.After,
			// an API server's Retry-After): requeue reads it, the trace
			// and the log show it.
			o.requeueAfter, _ = retry.DelayOf(o.err)
		}
		o.resourceVersion = rv
		f.finish(ctx, key, obj, tr, o)
		if replaced {
			if _, kept := f.state.tombstone(key); !kept {
				// Its delete chain is done: the object that replaced
				// it is reconciled next.
				f.Enqueue(key)
			}
		}
	}()

	// Running from before the object is read from the cache: a Release
	// from here on waits for this reconciliation. Begun only after the
	// read, a worker that read the object before a Release that then
	// returned at once started it after the hand-over, once the object's
	// delete event had forgotten the release.
	if !f.state.begin(key) {
		if d, ok := f.state.waiting(key); ok {
			// A requeue asked for before the wait its last failure
			// asked for, which the queue does not move later: not
			// before the wait's end.
			return outcome{result: resultWaiting, requeueAfter: d}
		}
		// Released (Release): another owner takes the object over.
		return outcome{result: ResultSkipped}
	}
	var acc metav1.Object // set once the object is read
	defer func() {
		if o.result == ResultError {
			if d, _ := retry.DelayOf(o.err); d > 0 {
				// Requeued after d at the earliest (requeue): a resync
				// until then, also one that came while it ran, does not
				// run it sooner (UpdateFunc).
				f.state.waitFor(key, d)
			}
		}
		var resync bool
		if acc == nil {
			resync = f.state.end(key, "", "", 0, false)
		} else {
			// Whatever the outcome, writes to the object that succeeded
			// are expected in the cache before the next reconciliation,
			// unless their watch event arrived already.
			rv, ok := resourceversioncontext.ResourceVersion(ctx)
			resync = f.state.end(key, acc.GetUID(), rv, acc.GetGeneration(), ok && rv != acc.GetResourceVersion())
		}
		if resync {
			// A resync came while it ran: it runs again, as the queue
			// does with a key added while it is processed.
			f.add(key)
		}
	}()

	obj, exists, err := f.informer.Get(key)
	if err != nil {
		return outcome{result: ResultError, err: fmt.Errorf("get %s from cache: %w", key, err)}
	}
	tombstone := false
	if !exists {
		if obj, tombstone = f.state.tombstone(key); !tombstone {
			f.state.forgetUncached(key)
			f.metrics.forget(key)
			return outcome{result: ResultSkipped}
		}
	} else if t, ok := f.state.tombstone(key); ok {
		// The object of a delete event was replaced by a new one of the
		// same name before its tombstone was reconciled: its delete chain
		// runs first. A tombstone of the cached object itself (it left the
		// informer's selection and came back) is dropped.
		if sameUID(t, obj) {
			f.state.dropTombstone(key)
		} else {
			obj, tombstone, replaced = t, true, true
		}
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return outcome{result: ResultPermanent, err: fmt.Errorf("object %s has no metadata: %w", key, err)}
	}
	acc = a
	rv = acc.GetResourceVersion()
	if tombstone {
		left, err := f.leftSelection(ctx, acc)
		if err != nil {
			return outcome{result: ResultError, err: fmt.Errorf("check whether %s was deleted or left the informer's selection: %w", key, err)}
		}
		if left {
			f.state.forget(key)
			f.metrics.forget(key)
			level.Info(f.logger).Log("msg", "object left the informer's selection but exists: not reconciled any more, its delete chain does not run", "object", key)
			return outcome{result: ResultSkipped}
		}
	}

	if !tombstone && !f.runSuperseded && !f.dryRun {
		rctx.watchGeneration(f, acc.GetGeneration())
	}
	if !tombstone {
		if stale, wait := f.state.stale(key, acc.GetUID(), acc.GetResourceVersion(), acc.GetGeneration(), f.writeExpectationTTL); stale {
			// Reconciled again when the cache shows the write (UpdateFunc),
			// at the latest after wait.
			return outcome{result: ResultStale, requeueAfter: wait}
		}
	}

	switch {
	case !f.conditions || tombstone:
		rctx.begin(tr, nil, nil, nil)
	case acc.GetDeletionTimestamp() != nil:
		// The delete chain marks it gone once the finalizer is removed.
		rctx.begin(tr, f, obj, f.newStatusRun(key, obj, acc))
	default:
		// Made when a resource asks for the conditions, or at the end
		// when the outcome is not the steady one (finishStatus).
		rctx.begin(tr, f, obj, nil)
	}
	o = f.runChain(ctx, rctx, key, obj, acc, tombstone, tr)
	if o.err != nil {
		o.errStep = stepOf(tr, resourceOf(o.err))
	}
	// Not retried, and the object is gone: no later event would end what
	// the Framework keeps about it.
	o.gone = tombstone && (o.result == ResultPermanent || o.result == ResultNoResourceSet || o.result == ResultDryRun)
	return f.finishStatus(ctx, rctx, acc, o, tr)
}

// finishStatus writes the conditions and observed generation that the
// outcome o of the reconciliation of rctx calls for (statusRun.finish),
// when the Framework keeps conditions. A reconciliation that made no
// status state (no resource asked for the conditions) and whose object
// (acc, the metadata of the object begin was given) already shows the
// steady outcome, success with Ready True at its generation, needs none:
// it ends here without making one.
func (f *Framework) finishStatus(ctx context.Context, rctx *reconcileContext, acc metav1.Object, o outcome, tr *trace.Trace) outcome {
	st := rctx.statusRun(false)
	if st == nil {
		if rctx.statusObj == nil {
			return o // no conditions kept
		}
		if o.result == ResultSuccess || o.result == ResultRequeue {
			if current, observed, err := readStatus(rctx.statusObj); err == nil && steadyStatus(current, observed, acc.GetGeneration(), tr.ResourceSet) {
				return o
			}
		}
		st = rctx.statusRun(true)
	}
	return st.finish(ctx, o, tr)
}

// routeOutcome is the outcome of a reconciliation that found no resource
// set for its object: a panic in Handles, no set, or another error. Apart,
// so that the *PanicError that errors.As needs escapes only then.
func routeOutcome(err error) outcome {
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return outcome{result: ResultPanic, err: err}
	case errors.Is(err, router.ErrNoResourceSet):
		return outcome{result: ResultNoResourceSet, err: err}
	}
	return outcome{result: ResultPermanent, err: err}
}

// route returns the resource set for obj, with a panic in a set's Handles
// (the user's code, recovered by the router) as a *PanicError naming the
// set as initCtx's does ("resource set "v1": handles: panic: ..."): the
// reconciliation then ends like one whose resource panicked (counted,
// retried with backoff, its status written), not in reconcile's
// last-resort recover, which writes no status.
func (f *Framework) route(obj any) (*router.ResourceSet, error) {
	set, err := f.router.ResourceSet(obj)
	if err != nil {
		return nil, handlesPanic(err)
	}
	return set, nil
}

// handlesPanic returns route's error for the router's err: a
// *router.PanicError as a *PanicError, others as they are. Apart, so that
// the *router.PanicError that errors.As needs escapes only then.
func handlesPanic(err error) error {
	var rp *router.PanicError
	if !errors.As(err, &rp) {
		return err
	}
	name, label := setNames(rp.ResourceSet, "#"+strconv.Itoa(rp.Index))
	return fmt.Errorf("resource set %s: handles: %w", name, &PanicError{Resource: "resource set " + label, Value: rp.Value, Stack: rp.Stack})
}

// initCtx is set.InitCtx, with a panic in it as a *PanicError. Its error
// names the set ("resource set "v1": init ctx: ..."), as set.InitCtx's
// does: callers return it as it is.
func initCtx(ctx context.Context, set *router.ResourceSet, obj any) (_ context.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			name, label := setNames(set, "(unnamed)")
			err = fmt.Errorf("resource set %s: init ctx: %w", name, &PanicError{Resource: "resource set " + label, Value: r, Stack: debug.Stack()})
		}
	}()
	return set.InitCtx(ctx, obj)
}

// setNames returns how a panic's error names set: its name quoted, and
// the label of PanicError.Resource (errors_total's resource label), its
// name; for a set without a name, unnamed and "(unnamed)".
func setNames(set *router.ResourceSet, unnamed string) (name, label string) {
	if n := set.Name(); n != "" {
		return strconv.Quote(n), n
	}
	return unnamed, "(unnamed)"
}

// recovered runs fn and returns a panic in it as a *PanicError naming what,
// as ensure does for a resource's operation: Plan's step of a resource. (A
// closure: initCtx, which runs in every reconciliation, recovers on its
// own, and the router recovers a panic in Handles.)
func recovered(what string, fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Resource: what, Value: r, Stack: debug.Stack()}
		}
	}()
	return fn()
}

// runChain routes obj and runs its resource set's chain: the delete chain
// and the finalizer's removal, or the finalizer's addition and the update
// chain. rctx carries the status state of the reconciliation, if any.
func (f *Framework) runChain(ctx context.Context, rctx *reconcileContext, key string, obj any, acc metav1.Object, tombstone bool, tr *trace.Trace) outcome {
	deleting := tombstone || acc.GetDeletionTimestamp() != nil
	ours := slices.Contains(acc.GetFinalizers(), f.finalizer)
	if deleting && !tombstone {
		// Before routing: a deletion that no set handles keeps the
		// finalizer, a stuck delete that objects_in_deletion must show.
		f.state.setDeleting(key, acc.GetDeletionTimestamp().Time, ours)
	}

	set, err := f.route(obj)
	if errors.Is(err, router.ErrNoResourceSet) && deleting {
		// Deleted after it left every set (relabelled to a release no set
		// handles): its delete chain is the last set's that handled it,
		// or its finalizer would keep it Terminating for good.
		if last := f.state.resourceSet(key); last != nil {
			set, err = last, nil
		}
	}
	if err != nil {
		if f.dryRun {
			f.traces.addPlans(key, nil) // planned nothing: no older plan stays
		}
		return routeOutcome(err)
	}
	tr.ResourceSet = set.Name()
	f.state.setResourceSet(key, set)
	if st := rctx.statusRun(false); st != nil {
		st.setName = set.Name()
	}

	withConds := false
	if f.dryRun {
		// InitCtx and the resources plan on the conditions a
		// reconciliation without DryRun has.
		ctx, withConds = f.planConditions(ctx, obj, tombstone)
	}
	if ctx, err = initCtx(ctx, set, obj); err != nil {
		if f.dryRun {
			f.traces.addPlans(key, nil)
		}
		return errorOutcome(err)
	}

	if f.dryRun {
		if deleting && !tombstone && !ours && f.ownsFinalizer {
			// A reconciliation without DryRun skips it, below: its
			// delete chain ran already, or the object was never ours
			// (Framework.Plan: Finalized).
			f.traces.addPlans(key, nil)
			return outcome{result: ResultSkipped}
		}
		plans, err := planWith(ctx, obj, set.Resources(), withConds) // a tombstone has a deletionTimestamp (deleted)
		// Also when a resource's error stopped the plan: the plans before
		// it, never an older plan that no longer holds.
		f.traces.addPlans(key, plans)
		if err != nil {
			return errorOutcome(err) // a panic in a resource is one
		}
		return outcome{result: ResultDryRun}
	}

	if deleting {
		if !tombstone && ours && f.state.wasFinalized(key, acc.GetUID()) {
			// The delete chain ran and the finalizer is gone; the cache has
			// not seen it yet (a child's event woke us up). Running the chain
			// again would only repeat deletes and fail the finalizer patch.
			return outcome{result: ResultSkipped}
		}
		if !tombstone && !ours && f.finalizers {
			// Our finalizer is gone: the delete chain already ran, or the
			// object was never ours. Another finalizer keeps it.
			return outcome{result: ResultSkipped}
		}
		if err := ProcessDelete(ctx, obj, set.Resources()); err != nil {
			return errorOutcome(err)
		}
		if rctx.superseded.Load() {
			return outcome{result: ResultSuperseded}
		}
		// A canceled delete chain did not run its remaining resources (or
		// steps): the finalizer stays, as when a resource keeps it, and
		// the chain runs again.
		if finalizerskeptcontext.IsKept(ctx) || reconciliationcanceledcontext.IsCanceled(ctx) {
			o := outcome{result: ResultFinalizerKept, rateLimited: true}
			if d, ok := requeuecontext.RequeueAfter(ctx); ok && d > 0 {
				o.rateLimited, o.requeueAfter = false, d
			}
			return o
		}
		if tombstone {
			f.state.forget(key)
			return outcome{result: ResultSuccess}
		}
		if ours {
			if err := f.removeFinalizer(ctx, key, acc); err != nil {
				return errorOutcome(err)
			}
			if st := rctx.statusRun(false); st != nil {
				st.setGone() // the object is gone, or going: no status to write
			}
		}
		f.state.setDeleting(key, time.Time{}, false)
		return outcome{result: ResultSuccess}
	}

	if f.finalizers && !ours {
		if obj, err = f.addFinalizer(ctx, obj, acc); err != nil {
			return errorOutcome(err)
		}
		// The status state of the object as read, then told of the
		// version the finalizer's patch made.
		if st := rctx.statusRun(true); st != nil {
			if nacc, err := meta.Accessor(obj); err == nil {
				st.setObject(obj, nacc)
			}
		}
	}
	if err := ProcessUpdate(ctx, obj, set.Resources()); err != nil {
		return errorOutcome(err)
	}
	if rctx.superseded.Load() {
		return outcome{result: ResultSuperseded}
	}
	if d, ok := requeuecontext.RequeueAfter(ctx); ok {
		// A delay of 0 is "as soon as the object's backoff allows": a
		// resource that asks in every reconciliation backs off instead of
		// keeping a worker busy.
		return outcome{result: ResultRequeue, requeueAfter: d, rateLimited: d <= 0}
	}
	return outcome{result: ResultSuccess}
}

// sameUID reports whether a and b are the same object (UID).
func sameUID(a, b any) bool {
	x, err := meta.Accessor(a)
	if err != nil {
		return false
	}
	y, err := meta.Accessor(b)
	return err == nil && x.GetUID() == y.GetUID()
}

// cached returns the metadata of the cached object with key, nil when there
// is none.
func (f *Framework) cached(key string) metav1.Object {
	obj, exists, err := f.informer.Get(key)
	if err != nil || !exists {
		return nil
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return acc
}

// cachedGeneration returns the generation of the cached object with key, 0
// when there is none.
func (f *Framework) cachedGeneration(key string) int64 {
	if acc := f.cached(key); acc != nil {
		return acc.GetGeneration()
	}
	return 0
}

// cacheMovedOn reports whether the cache holds a version of the object other
// than rv, the one a reconciliation read.
func (f *Framework) cacheMovedOn(key, rv string) bool {
	acc := f.cached(key)
	return rv != "" && acc != nil && acc.GetResourceVersion() != rv
}

// awaitWinner is called by requeue after a reconciliation of key ended
// with o, a conflict whose winner the cache did not show. When the conflict is
// on the reconciled object itself (conflictOnObject: a finalizer patch, a
// status apply or a Guard lock that carried the resourceVersion read), a
// retry from the same cache would send the same write to fail the same
// way: the retry waits for the cache to show another version (the winner's
// watch event enqueues the object), at most the write expectation's TTL.
// The backoff still counts the conflict. A conflict on another object (a
// child's update) is retried with the backoff alone: the owner's cache
// need not change for it.
func (f *Framework) awaitWinner(key string, o outcome) {
	acc := f.cached(key)
	if acc == nil || acc.GetResourceVersion() != o.resourceVersion || !f.conflictOnObject(o.err, acc) {
		return
	}
	f.state.awaitChange(key, acc.GetUID(), o.resourceVersion, acc.GetGeneration())
}

// conflictOnObject reports whether err is the API server's conflict on obj
// itself (its group, resource and name), not on another object.
func (f *Framework) conflictOnObject(err error, obj metav1.Object) bool {
	var s apierrors.APIStatus
	if f.ownGR.Resource == "" || !errors.As(err, &s) {
		return false
	}
	st := s.Status()
	d := st.Details
	return st.Reason == metav1.StatusReasonConflict && d != nil && d.Name == obj.GetName() && d.Kind == f.ownGR.Resource && d.Group == f.ownGR.Group
}

func errorOutcome(err error) outcome {
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		return outcome{result: ResultPanic, err: err}
	case retry.IsPermanent(err):
		return outcome{result: ResultPermanent, err: err}
	case apierrors.IsConflict(err):
		return outcome{result: ResultConflict, err: err}
	}
	return outcome{result: ResultError, err: err}
}

// finish records the outcome of one reconciliation: metrics, trace, log,
// events and object state.
func (f *Framework) finish(ctx context.Context, key string, obj any, tr *trace.Trace, o outcome) {
	if o.result == resultWaiting {
		tr.Release() // nothing ran
		return
	}
	// One clock read for the trace, the duration metric and the time of
	// the last success.
	d := tr.Finish(o.result, o.requeueAfter, o.err)
	f.metrics.observe(o.result, d)
	if !f.traces.add(key, tr) {
		// Folded into the object's last trace, or not kept: its steps
		// are the next reconciliation's buffer (about every no-op
		// reconciliation's trace costs only its small Trace struct).
		defer tr.Release()
	}

	switch o.result {
	case ResultSuccess, ResultRequeue, ResultDryRun, ResultFinalizerKept:
		f.state.done(key)
		f.metrics.lastSuccess.Set(float64(tr.Start.Add(d).UnixNano()) / 1e9)
		if f.state.recovered(key) {
			f.event(ctx, obj, corev1.EventTypeNormal, "Recovered", "reconciled successfully after earlier failures")
		}
	case ResultSkipped:
		f.state.done(key)
	case ResultConflict, ResultStale, ResultSuperseded:
		// Neither a failure nor done: the object is retried with fresh
		// state.
	case ResultNoResourceSet, ResultPermanent:
		// Not retried until the object changes: no longer pending, but
		// failed, so that the success after a fix is reported.
		f.state.done(key)
		f.state.setFailed(key)
	case ResultError, ResultPanic:
		f.state.setFailed(key)
	}
	if o.gone {
		f.state.forget(key)
		f.metrics.forget(key)
	}

	// Built only for the lines below: most reconciliations log nothing.
	var logger log.Logger
	switch o.result {
	case ResultPanic, ResultError, ResultPermanent, ResultConflict, ResultNoResourceSet:
		logger = log.With(f.logger, "object", key)
	}
	switch o.result {
	case ResultPanic:
		var pe *PanicError
		errors.As(o.err, &pe)
		f.metrics.panics.Inc()
		res := resourceOf(o.err)
		f.metrics.countError(res, o.failedStep(tr, res))
		level.Error(logger).Log("msg", "reconciliation panicked", "err", o.err, "stack", string(pe.Stack))
		f.event(ctx, obj, corev1.EventTypeWarning, "ReconcilePanicked", o.err.Error())
	case ResultError, ResultPermanent:
		res := resourceOf(o.err)
		f.metrics.countError(res, o.failedStep(tr, res))
		kv := []any{"msg", "reconciliation failed", "result", o.result}
		if o.requeueAfter > 0 {
			kv = append(kv, "retryAfter", o.requeueAfter)
		}
		level.Error(logger).Log(append(kv, "err", o.err)...)
		f.event(ctx, obj, corev1.EventTypeWarning, "ReconcileFailed", o.err.Error())
	case ResultConflict:
		level.Info(logger).Log("msg", "conflict: retrying with the latest object", "err", o.err)
	case ResultNoResourceSet:
		level.Warn(logger).Log("msg", "no resource set handles the object; not retried with backoff: run again when it changes, or at the resync", "err", o.err)
		f.event(ctx, obj, corev1.EventTypeWarning, "NoResourceSet", o.err.Error())
	}
	// traceLine is a fmt.Stringer: formatted only when debug logs are on.
	// Without a Config.Logger there is no line to build at all.
	if f.debugLogger != nil {
		f.debugLogger.Log("object", key, "msg", "reconciled", "trace", traceLine{tr})
	}
}

// event records an event on obj when an EventRecorder is configured, unless
// ctx, the reconciliation's, was ended by Abort: the Lease is lost, another
// replica may own the object, and an Event is a write too (the operator's
// fence would refuse it, and the broadcaster retry it). A reconciliation
// that timed out still records its failure.
func (f *Framework) event(ctx context.Context, obj any, eventType, reason, message string) {
	if f.recorder == nil {
		return
	}
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return
	}
	ro, ok := obj.(runtime.Object)
	if !ok || ro == nil {
		return
	}
	f.recorder.Event(ro, eventType, reason, eventMessage(message))
}

// eventMessage returns message cut to 1024 bytes, at the start of a UTF-8
// character, with "..." when it was cut: the API server keeps an Event's
// message whole, and an error can be long.
func eventMessage(message string) string {
	const maxMessage = 1024
	if len(message) <= maxMessage {
		return message
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(message[cut]) {
		cut--
	}
	return message[:cut] + "..."
}

// finalizerPatch is a JSON merge patch of metadata.finalizers with a
// resourceVersion precondition: the API server rejects it with a conflict
// when the object changed since it was read, so no finalizer written by
// someone else in between is lost.
type finalizerPatch struct {
	Metadata struct {
		Finalizers      []string `json:"finalizers"`
		ResourceVersion string   `json:"resourceVersion"`
	} `json:"metadata"`
}

func (f *Framework) patchFinalizers(ctx context.Context, acc metav1.Object, rv string, finalizers []string) (string, error) {
	var p finalizerPatch
	p.Metadata.Finalizers = finalizers
	p.Metadata.ResourceVersion = rv
	data, err := json.Marshal(p)
	if err != nil {
		return "", err
	}
	var res metav1.Object
	if f.metaClient != nil {
		res, err = f.metaClient.Resource(f.resource).Namespace(acc.GetNamespace()).Patch(ctx, acc.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
	} else {
		res, err = f.client.Resource(f.resource).Namespace(acc.GetNamespace()).Patch(ctx, acc.GetName(), types.MergePatchType, data, metav1.PatchOptions{})
	}
	if err != nil {
		return "", err
	}
	return res.GetResourceVersion(), nil
}

// leftSelection reports whether the object of a delete event (acc, its
// last known state) still exists in the API server with the same UID: it
// left the informer's view (a label or field selector that no longer
// matches, a shard that moved) without being deleted, and its delete chain
// must not run. The informer cannot tell the two apart, so the object is
// read from the API server (through MetadataClient when set, else Client).
// It runs only for a tombstone, a delete the Framework did not finalize
// itself: with finalizers that is rare (an object that left the selection,
// or lost its finalizer to someone else, or was deleted before its first
// reconciliation); with DisableFinalizers it is one read per deleted
// object. Without a client, an object is taken to be deleted.
func (f *Framework) leftSelection(ctx context.Context, acc metav1.Object) (bool, error) {
	if f.resource.Resource == "" || f.metaClient == nil && f.client == nil {
		return false, nil
	}
	cur, err := f.readMeta(ctx, acc)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return cur.GetUID() == acc.GetUID(), nil
}

// addFinalizer adds the Framework's finalizer and returns a copy of obj with
// the new finalizers and resourceVersion, so that resources which write the
// object (status) do not conflict with this write. A conflict is returned as
// an error: the object is retried with its latest state.
func (f *Framework) addFinalizer(ctx context.Context, obj any, acc metav1.Object) (any, error) {
	finalizers := append(slices.Clone(acc.GetFinalizers()), f.finalizer)
	tr := trace.FromContext(ctx)
	start := tr.Now()
	rv, err := f.patchFinalizers(ctx, acc, acc.GetResourceVersion(), finalizers)
	if err != nil {
		tr.Record("framework", StepAddFinalizer, start, trace.OutcomeError, err)
		return nil, fmt.Errorf("add finalizer %s: %w", f.finalizer, err)
	}
	tr.Record("framework", StepAddFinalizer, start, trace.OutcomeDone, nil)
	resourceversioncontext.SetResourceVersion(ctx, rv)
	ro, ok := obj.(runtime.Object)
	if !ok {
		return obj, nil
	}
	cp := ro.DeepCopyObject()
	cacc, err := meta.Accessor(cp)
	if err != nil {
		return obj, nil
	}
	cacc.SetFinalizers(finalizers)
	cacc.SetResourceVersion(rv)
	return cp, nil
}

// removeFinalizer removes the Framework's finalizer from the object key
// after the delete chain succeeded. A 404 means the object is gone already.
// The patch carries the finalizers and resourceVersion read, or, when the
// delete chain wrote the object itself since (resourceversioncontext), those
// of the object read again from the API server.
//
// The UID is marked finalized before the patch is sent: the object's
// deletion event can arrive before the patch's answer, and must find the
// mark (or the delete chain would run again from a tombstone). A failed
// patch takes the mark back. A 404 keeps it, for the deletion event that
// may still come; one that came before the mark left a tombstone, whose
// reconciliation forgets the key, and the mark with it.
//
// Without a client (DisableFinalizers and neither Client nor
// MetadataClient) a finalizer left from a run with finalizers cannot be
// removed: that is a permanent error asking for its removal by hand.
func (f *Framework) removeFinalizer(ctx context.Context, key string, acc metav1.Object) error {
	if f.client == nil && f.metaClient == nil {
		err := retry.Permanent(fmt.Errorf("remove finalizer %s of %s: the Framework has no Client or MetadataClient to write it with (DisableFinalizers): remove it by hand", f.finalizer, key))
		tr := trace.FromContext(ctx)
		tr.Record("framework", StepRemoveFinalizer, tr.Now(), trace.OutcomeError, err)
		return err
	}
	tr := trace.FromContext(ctx)
	start := tr.Now()
	current, rv := acc.GetFinalizers(), acc.GetResourceVersion()
	if w, ok := resourceversioncontext.ResourceVersion(ctx); ok && w != "" && w != rv {
		// The delete chain wrote the object itself (a Guard's lock, a
		// status patch): the version read would conflict with that write,
		// and the finalizers read need not be the object's any more (the
		// write need not have carried a precondition, and another
		// controller may have removed its finalizer before it; the API
		// server refuses to add one back to an object in deletion). They
		// are read again, and patched on the version read.
		cur, err := f.readMeta(ctx, acc)
		if apierrors.IsNotFound(err) || err == nil && cur.GetUID() != acc.GetUID() {
			// Gone: as a 404 of the patch.
			f.state.markFinalized(key, acc.GetUID())
			tr.Record("framework", StepRemoveFinalizer, start, trace.OutcomeDone, nil)
			return nil
		}
		if err != nil {
			err = fmt.Errorf("remove finalizer %s: read the object after the delete chain's own write: %w", f.finalizer, err)
			tr.Record("framework", StepRemoveFinalizer, start, trace.OutcomeError, err)
			return err
		}
		current, rv = cur.GetFinalizers(), cur.GetResourceVersion()
	}
	finalizers := slices.DeleteFunc(slices.Clone(current), func(s string) bool { return s == f.finalizer })
	f.state.markFinalized(key, acc.GetUID())
	if _, err := f.patchFinalizers(ctx, acc, rv, finalizers); err != nil && !apierrors.IsNotFound(err) {
		f.state.unmarkFinalized(key, acc.GetUID())
		tr.Record("framework", StepRemoveFinalizer, start, trace.OutcomeError, err)
		return fmt.Errorf("remove finalizer %s: %w", f.finalizer, err)
	}
	tr.Record("framework", StepRemoveFinalizer, start, trace.OutcomeDone, nil)
	return nil
}

// readMeta reads the object of acc from the API server, through
// MetadataClient when it is set, else Client (one of them must be).
func (f *Framework) readMeta(ctx context.Context, acc metav1.Object) (metav1.Object, error) {
	if f.metaClient != nil {
		return f.metaClient.Resource(f.resource).Namespace(acc.GetNamespace()).Get(ctx, acc.GetName(), metav1.GetOptions{})
	}
	return f.client.Resource(f.resource).Namespace(acc.GetNamespace()).Get(ctx, acc.GetName(), metav1.GetOptions{})
}

// resourceOf returns the resource an error came from, "framework" when none.
func resourceOf(err error) string {
	var ee *ExecutionError
	if errors.As(err, &ee) {
		return ee.Resource
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return pe.Resource
	}
	return "framework"
}

// failedStep returns o.errStep, or, when the chain did not tell it (it
// failed before the chain ran), stepOf(tr, res).
func (o outcome) failedStep(tr *trace.Trace, res string) string {
	if o.errStep != "" {
		return o.errStep
	}
	return stepOf(tr, res)
}

// stepOf returns the step of res (the resource the reconciliation's error
// came from, resourceOf) whose failure ended the reconciliation: res's last
// failed step in tr or, when that is its whole operation ("ensure created",
// "ensure deleted"), the failed step recorded just before it, inside it (a
// crud step); "reconcile" when tr holds no failed step of res. A step that
// failed earlier and was recovered from (an attempt of a whole operation
// that the retry wrapper retried, in res or a resource before it) is not
// the failure.
func stepOf(tr *trace.Trace, res string) string {
	steps := tr.Snapshot().Steps
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].Resource != res || steps[i].Outcome != trace.OutcomeError {
			continue
		}
		op := steps[i].Step
		if (op == resource.OperationEnsureCreated || op == resource.OperationEnsureDeleted) && i > 0 && steps[i-1].Resource == res && steps[i-1].Outcome == trace.OutcomeError {
			return steps[i-1].Step // the failure inside the operation
		}
		return op
	}
	return "reconcile"
}
