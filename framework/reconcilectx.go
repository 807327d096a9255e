package framework

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/operatorkit/operatorkit/internal/ctxkey"
	"github.com/operatorkit/operatorkit/internal/signal"
	"github.com/operatorkit/operatorkit/trace"
)

// reconcileContext is the context of one reconciliation: it carries the
// values of base, which Boot's context does not end (an in-flight
// reconciliation is bounded by its deadline) but Framework.Abort does, and
// it ends at deadline, when stopped, or when base ends. It behaves like
// context.WithDeadline(base, deadline), but makes its
// Done channel and timer only when asked for Done or when its Err could be
// non-nil. A client call asks; a reconciliation that reads only caches and
// changes nothing, the most common kind, never does and costs no timer.
//
// It also carries the values of the reconciliation, in its own fields and
// answered by Value: a fresh set of signals (as signal.WithFresh makes
// them), and, from begin on, the trace, the conditions and the status
// fields. One allocation
// and one context layer instead of one of each per value, which also keeps
// the resources' look-ups short.
//
// Once materialized, every method answers from the inner context, including
// Value for the context package's internal key (but not for the values
// above), so that children made with context.WithCancel attach to the inner
// cancelCtx directly instead of starting a goroutine each.
type reconcileContext struct {
	base     context.Context // detached from Boot's context; ended by Abort only
	deadline time.Time

	inner atomic.Pointer[materialized]
	mu    sync.Mutex // guards stopped and the making of inner

	// watched, when not nil, is the Framework whose cache supersededBy
	// reads: the object (its key is the trace's Object), reconciled at
	// generation.
	watched    *Framework
	generation int64
	superseded atomic.Bool
	// stopped is next to superseded, in the same word, and the object's
	// key is not a field of its own (the trace's Object is it): the
	// struct takes a size class of 160 bytes (TestReconcileContextSize).
	stopped bool

	signals signal.Signals
	// trace, statusOf and statusObj are set by begin, before the chain
	// runs and before anything that reads them can run on another
	// goroutine. trace.Object is the key of the reconciled object.
	trace *trace.Trace
	// statusOf, when not nil, is the Framework that keeps the conditions
	// of statusObj, the object as the reconciliation read it; status is
	// their state (made by statusRun).
	statusOf  *Framework
	statusObj any
	status    atomic.Pointer[statusRun]
}

// begin makes the context carry tr, the reconciliation's trace, as
// trace.NewContext would; tr.Object is the object's key. When f keeps
// conditions (st or obj not nil), it also carries the conditions of the
// object obj, as
// conditioncontext.NewGuardedContext would: st's when the caller made it,
// else a statusRun made when first asked for (statusRun), so that a
// reconciliation that neither sets nor reads conditions, and leaves them
// as they are, never makes one. The reconciliation's goroutine calls it
// once, before the chain runs.
func (c *reconcileContext) begin(tr *trace.Trace, f *Framework, obj any, st *statusRun) {
	c.trace = tr
	if st != nil {
		c.status.Store(st)
	}
	if st != nil || obj != nil {
		c.statusOf, c.statusObj = f, obj
	}
}

// statusRun returns the reconciliation's status state: the one begin was
// given or made before, or, with create, a new one for the object begin was
// given (its resource set named by the trace). It returns nil when the
// reconciliation keeps no conditions, or when it has none yet and create is
// false. Safe for concurrent use.
func (c *reconcileContext) statusRun(create bool) *statusRun {
	if st := c.status.Load(); st != nil || !create || c.statusObj == nil {
		return st
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st := c.status.Load(); st != nil {
		return st
	}
	acc, err := meta.Accessor(c.statusObj)
	if err != nil { // checked by reconcile before begin
		return nil
	}
	st := c.statusOf.newStatusRun(c.trace.Object, c.statusObj, acc)
	st.setName = c.trace.ResourceSet
	c.status.Store(st)
	return st
}

// watchGeneration makes supersededBy compare the cached generation of the
// object (the key begin's trace names) to generation.
func (c *reconcileContext) watchGeneration(f *Framework, generation int64) {
	c.watched, c.generation = f, generation
}

// supersededKey is the context key under which a reconcileContext answers
// with itself, for process.
type supersededKey struct{}

// supersededBy reports whether the reconciliation of ctx should stop
// because the cache already holds a newer generation of its object; it
// remembers a yes. It is false outside a Framework's reconciliation.
func supersededBy(ctx context.Context) bool {
	c, _ := ctx.Value(supersededKey{}).(*reconcileContext)
	if c == nil || c.watched == nil || c.trace == nil {
		return false
	}
	if c.superseded.Load() {
		return true
	}
	if c.watched.cachedGeneration(c.trace.Object) > c.generation {
		c.superseded.Store(true)
		return true
	}
	return false
}

type materialized struct {
	ctx    context.Context
	cancel context.CancelFunc
}

// newReconcileContext returns the context of a reconciliation that must end
// by deadline. detached is not ended by Boot's context (only by Abort).
// Call stop when the reconciliation returns.
func newReconcileContext(detached context.Context, deadline time.Time) *reconcileContext {
	return &reconcileContext{base: detached, deadline: deadline}
}

func (c *reconcileContext) Deadline() (time.Time, bool) { return c.deadline, true }

func (c *reconcileContext) Done() <-chan struct{} { return c.materialize().Done() }

func (c *reconcileContext) Err() error {
	if m := c.inner.Load(); m != nil {
		return m.ctx.Err()
	}
	c.mu.Lock()
	stopped := c.stopped
	c.mu.Unlock()
	if stopped || !time.Now().Before(c.deadline) || c.base.Err() != nil {
		return c.materialize().Err()
	}
	return nil
}

func (c *reconcileContext) Value(key any) any {
	switch k := key.(type) {
	case signal.Key:
		if v := c.signals.Lookup(k); v != nil {
			return v
		}
	case ctxkey.Trace:
		if c.trace != nil {
			return c.trace
		}
	case ctxkey.Conditions:
		if st := c.statusRun(true); st != nil {
			return &st.conds
		}
	case ctxkey.StatusFields:
		if st := c.statusRun(true); st != nil {
			return &st.fields
		}
	case supersededKey:
		return c
	}
	if m := c.inner.Load(); m != nil {
		return m.ctx.Value(key)
	}
	return c.base.Value(key)
}

func (c *reconcileContext) String() string { return "framework.reconcileContext" }

// materialize returns the inner context, making it on first use.
func (c *reconcileContext) materialize() context.Context {
	if m := c.inner.Load(); m != nil {
		return m.ctx
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m := c.inner.Load(); m != nil {
		return m.ctx
	}
	ctx, cancel := context.WithDeadline(c.base, c.deadline)
	if c.stopped {
		cancel()
	}
	c.inner.Store(&materialized{ctx: ctx, cancel: cancel})
	return ctx
}

// stop ends the context (context.Canceled unless the deadline passed first)
// and releases its timer. It is idempotent.
func (c *reconcileContext) stop() {
	c.mu.Lock()
	c.stopped = true
	m := c.inner.Load()
	c.mu.Unlock()
	if m != nil {
		m.cancel()
	}
}
