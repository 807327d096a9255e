package trace

import (
	"context"
	"sync"
	"time"

	"github.com/operatorkit/operatorkit/internal/ctxkey"
)

// Outcome is how a step ended.
type Outcome string

// The outcomes of a step.
const (
	// OutcomeDone is a step that ran and succeeded.
	OutcomeDone Outcome = "done"
	// OutcomeSkipped is a step that did not run because there was nothing to
	// do, such as an apply step for a patch part that is not set.
	OutcomeSkipped Outcome = "skipped"
	// OutcomeCanceled is a step that did not run because the resource or the
	// reconciliation was canceled.
	OutcomeCanceled Outcome = "canceled"
	// OutcomeError is a step that ran and failed.
	OutcomeError Outcome = "error"
)

// Step is one recorded step of a reconciliation.
type Step struct {
	// Resource is the name of the resource the step belongs to.
	Resource string `json:"resource"`
	// Step is the step's name, a crud.Step* or resource.Operation* constant.
	Step string `json:"step"`
	// Outcome is how the step ended.
	Outcome Outcome `json:"outcome"`
	// Start is when the step started.
	Start time.Time `json:"start"`
	// Duration is how long the step took; about 0 for steps that did not run.
	Duration time.Duration `json:"duration"`
	// Error is the step's error message when Outcome is OutcomeError.
	Error string `json:"error,omitempty"`
}

// Trace is the record of one reconciliation of one object. The caller that
// runs the reconciliation fills Object and ResourceSet, passes the Trace to
// [NewContext], and calls [Trace.Finish] at the end; resources and the
// framework append Steps through [Record].
//
// Once passed to NewContext, a Trace is safe for concurrent use through its
// methods; read it with [Trace.Snapshot] rather than through its fields while
// the reconciliation may still be running.
type Trace struct {
	// Object identifies the reconciled object, usually "namespace/name".
	Object string `json:"object"`
	// ResourceSet is the name of the resource set that handled the object.
	ResourceSet string `json:"resourceSet,omitempty"`
	// Start is when the reconciliation started; NewContext sets it when zero.
	Start time.Time `json:"start"`
	// Duration is how long the reconciliation took; set by Finish.
	Duration time.Duration `json:"duration"`
	// Steps are the recorded steps in the order they ended: all of them,
	// or, once the Trace held its limit ([Trace.Limit]), the first ones
	// and the last KeptLast (see DroppedSteps).
	Steps []Step `json:"steps"`
	// Result is the caller's summary of the outcome, such as "success",
	// "error" or "requeue"; set by Finish.
	Result string `json:"result,omitempty"`
	// RequeueAfter is the requeue delay asked for, if any: a resource's
	// (requeuecontext), or for a failure the wait its error asked for
	// (retry.After, an API server's Retry-After; the Framework waits that
	// or the object's backoff, whichever is longer); set by Finish.
	RequeueAfter time.Duration `json:"requeueAfter,omitempty"`
	// Error is the reconciliation's error message, if any; set by Finish.
	Error string `json:"error,omitempty"`
	// Repeats is how many earlier reconciliations, one after the other
	// and each going the same way as this one, a store folded into it
	// (see [Trace.Fold]); 0 when the Trace stands for itself alone.
	Repeats int `json:"repeats,omitempty"`
	// FirstStart is the Start of the first of the reconciliations folded
	// into this Trace; zero when Repeats is 0.
	FirstStart time.Time `json:"firstStart,omitzero"`
	// DroppedSteps is how many recorded steps the Trace did not keep,
	// because it held the most steps [Trace.Limit] allows: they ended
	// before the last KeptLast steps of Steps (all of Steps when it holds
	// no more) and after the ones before those.
	// 0 when every step is in Steps.
	DroppedSteps int `json:"droppedSteps,omitempty"`

	// mu guards the fields once the Trace is in a context. It is a pointer,
	// set by NewContext, so that a Trace value from Snapshot can be copied
	// freely (go vet's copylocks).
	mu *sync.Mutex
	// buf is the pooled buffer Steps was made from by NewSized, until
	// Compact or Release gives it back; nil otherwise.
	buf *[]Step
	// limit is the most steps the Trace holds (Limit); 0: no limit.
	limit int
}

// New returns a Trace of object that started at start, ready for
// NewContext, with room for 12 steps, in fewer allocations than a
// composite literal plus NewContext.
func New(object string, start time.Time) *Trace {
	b := &traceBlock{}
	b.t.Object, b.t.Start, b.t.mu = object, start, &b.mu
	b.t.Steps = b.steps[:0]
	return &b.t
}

// NewSized is New with room for steps steps, so that a reconciliation
// whose number of steps is known (the framework's: about 7 per crud
// resource) records them without growing the slice. The room comes from a
// pool of step buffers that [Trace.Compact] and [Trace.Release] refill: a
// caller that runs many reconciliations and calls one of them when it is
// done with each Trace allocates only the small Trace itself per
// reconciliation. A caller that calls neither leaves the buffer to the
// garbage collector, which is correct too. A negative steps is 0.
func NewSized(object string, start time.Time, steps int) *Trace {
	steps = max(steps, 0) // make would panic
	b := &traceHead{}
	b.t.Object, b.t.Start, b.t.mu = object, start, &b.mu
	if steps > maxPooledSteps {
		b.t.Steps = make([]Step, 0, steps)
		return &b.t
	}
	buf, _ := stepBuffers.Get().(*[]Step)
	if buf == nil || cap(*buf) < steps {
		s := make([]Step, 0, steps)
		buf = &s
	}
	b.t.Steps, b.t.buf = (*buf)[:0], buf
	return &b.t
}

// maxPooledSteps bounds the step buffers kept for reuse, so that one very
// long chain does not pin a large buffer.
const maxPooledSteps = 256

// stepBuffers holds *[]Step buffers, cleared and of length 0, for NewSized.
var stepBuffers sync.Pool

// Compact gives t's steps a slice of their own of exactly their length and
// returns the buffer they were recorded into (NewSized's) for reuse: call
// it when the reconciliation is over and t is kept (in a store of traces),
// so that a kept Trace holds no more than its steps. t stays complete and
// usable; a step recorded later (by a resource that ignored the end of its
// reconciliation) is appended to the new slice. It does nothing on a nil t
// or a t whose steps are not in a NewSized buffer, and is safe for
// concurrent use.
func (t *Trace) Compact() {
	t.detach(true, nil)
}

// Release returns the buffer t's steps were recorded into (NewSized's) for
// reuse and leaves t with no steps: call it when the reconciliation is
// over and nothing keeps t (a store folded it into an earlier Trace, see
// [Trace.Fold]). A step recorded into t later lands in a slice of its own,
// never in a buffer another Trace uses. It does nothing on a nil t or a t
// whose steps are not in a NewSized buffer, and is safe for concurrent
// use.
func (t *Trace) Release() {
	t.detach(false, nil)
}

// CompactReusing is [Trace.Compact] for a store of traces that drops
// dropped, a Trace it kept (compacted) until now, as it keeps t: t's steps
// move into dropped's slice when that has room for them and at most twice
// that, instead of a new one, and dropped is then left with no steps (a
// step recorded into it later lands in a slice of its own). A store that
// keeps the traces of more objects than it has room for, and so drops one
// object's trace for each it keeps, then allocates no steps at all. A nil
// dropped, dropped == t, or a dropped whose steps are still in a NewSized
// buffer is not used: CompactReusing is then Compact. Nor is dropped used,
// nor changed, when t's steps are not in a NewSized buffer (Compact does
// nothing then). It is safe for concurrent use.
func (t *Trace) CompactReusing(dropped *Trace) {
	if t == nil {
		return
	}
	t.lock()
	n, pooled := len(t.Steps), t.buf != nil
	t.unlock()
	var taken []Step
	if pooled && dropped != nil && dropped != t {
		dropped.lock()
		if c := cap(dropped.Steps); dropped.buf == nil && fits(n, c) {
			taken = dropped.Steps
			dropped.Steps = nil
		}
		dropped.unlock()
	}
	if !t.detach(true, taken[:0]) && taken != nil {
		// Not used after all (t was compacted meanwhile, or grew): dropped
		// gets its steps back, unless it recorded a step since.
		dropped.lock()
		if dropped.Steps == nil {
			dropped.Steps = taken
		}
		dropped.unlock()
	}
}

// fits reports whether a slice with room for c steps is used for n: it
// must hold them and not waste more than their size.
func fits(n, c int) bool {
	return n > 0 && n <= c && c <= 2*n
}

// detach gives t's NewSized buffer back to the pool; with keep, t's steps
// move to spare when it fits them (at most twice their number), else to a
// new slice of exactly their length. It reports whether it used spare.
func (t *Trace) detach(keep bool, spare []Step) (usedSpare bool) {
	if t == nil {
		return false
	}
	t.lock()
	buf := t.buf
	if buf == nil {
		t.unlock()
		return false
	}
	t.buf = nil
	// The buffer's first used steps hold this trace's strings; the rest
	// is still zero (buffers enter the pool cleared). Steps that outgrew
	// the buffer filled all of it.
	used := min(len(t.Steps), cap(*buf))
	switch n := len(t.Steps); {
	case !keep || n == 0:
		t.Steps = nil
	case fits(n, cap(spare)):
		full := spare[:cap(spare)]
		copy(full, t.Steps)
		clear(full[n:])
		t.Steps = full[:n]
		usedSpare = true
	default:
		t.Steps = append([]Step(nil), t.Steps...)
	}
	t.unlock()
	// The buffer's strings (errors) must not outlive their trace.
	clear((*buf)[:used])
	*buf = (*buf)[:0]
	stepBuffers.Put(buf)
	return usedSpare
}

// traceBlock holds a Trace, its lock and its first steps in one allocation.
type traceBlock struct {
	t     Trace
	mu    sync.Mutex
	steps [12]Step
}

// traceHead holds a Trace and its lock in one allocation.
type traceHead struct {
	t  Trace
	mu sync.Mutex
}

// Len returns the number of steps recorded so far; 0 for a nil t. It is
// safe for concurrent use.
func (t *Trace) Len() int {
	if t == nil {
		return 0
	}
	t.lock()
	defer t.unlock()
	return len(t.Steps)
}

// KeptLast is how many of the last steps recorded a Trace at its limit
// ([Trace.Limit]) keeps: a failed operation of a resource and the failed
// step inside it, recorded just before it, which together tell what ended
// the reconciliation.
const KeptLast = 2

// Limit makes t hold at most n steps, so that a chain that records a great
// many (a resource that records in a loop, or retried many times, or one
// that goes on recording after its reconciliation ended) takes bounded
// memory: t keeps its first n-KeptLast steps and the last KeptLast
// recorded (with n under KeptLast, the last n), each later step pushing
// the oldest of those out, and counts the others in DroppedSteps. A t with
// more than n steps is cut so at once. A limit below 1 is 1; a later Limit
// replaces an earlier one. It does nothing on a nil t and is safe for
// concurrent use.
func (t *Trace) Limit(n int) {
	if t == nil {
		return
	}
	n = max(n, 1)
	t.lock()
	defer t.unlock()
	t.limit = n
	if k := len(t.Steps); k > n {
		last := min(KeptLast, n)
		copy(t.Steps[n-last:n], t.Steps[k-last:])
		clear(t.Steps[n:]) // their strings must not outlive them
		t.Steps = t.Steps[:n]
		t.DroppedSteps += k - n
	}
}

// add appends s to t.Steps or, when t holds its limit, drops the oldest of
// the last KeptLast steps and puts s last. t's lock is held.
func (t *Trace) add(s Step) {
	if n := len(t.Steps); t.limit > 0 && n >= t.limit {
		last := min(KeptLast, n)
		copy(t.Steps[n-last:], t.Steps[n-last+1:])
		t.Steps[n-1] = s
		t.DroppedSteps++
		return
	}
	t.Steps = append(t.Steps, s)
}

// NewContext returns a child of ctx carrying t, so that the steps of the
// reconciliation run with that context are recorded into t. It sets t.Start
// to the current time when it is zero. Call it before t is shared with other
// goroutines. A nil t returns ctx unchanged.
func NewContext(ctx context.Context, t *Trace) context.Context {
	if t == nil {
		return ctx
	}
	if t.mu == nil {
		t.mu = new(sync.Mutex)
	}
	if t.Start.IsZero() {
		t.Start = time.Now()
	}
	return context.WithValue(ctx, ctxkey.Trace{}, t)
}

// FromContext returns the Trace carried by ctx, or nil when there is none.
func FromContext(ctx context.Context) *Trace {
	t, _ := ctx.Value(ctxkey.Trace{}).(*Trace)
	return t
}

// Record appends a step to the Trace carried by ctx; see [Trace.Record]. It
// does nothing, and allocates nothing, when ctx carries no Trace. It is safe
// for concurrent use.
func Record(ctx context.Context, resource, step string, start time.Time, outcome Outcome, err error) {
	FromContext(ctx).Record(resource, step, start, outcome, err)
}

// Record appends the step of resource that started at start and ended now
// with outcome; err, if not nil, becomes the step's Error. It does nothing on
// a nil t, so recorders can call it unconditionally after a single
// [FromContext]. It is safe for concurrent use.
func (t *Trace) Record(resource, step string, start time.Time, outcome Outcome, err error) {
	t.RecordNext(resource, step, start, outcome, err)
}

// RecordNext is [Trace.Record] for steps that run one after the other: it
// returns the end of the step it appended, for the caller to pass as the
// start of its next step instead of reading the clock again with
// [Trace.Now]. The next step then also counts the caller's own work between
// the two, and each step costs one clock read instead of two. It returns the
// zero time on a nil t.
func (t *Trace) RecordNext(resource, step string, start time.Time, outcome Outcome, err error) time.Time {
	if t == nil {
		return time.Time{}
	}
	d := time.Since(start)
	s := Step{Resource: resource, Step: step, Outcome: outcome, Start: start, Duration: d}
	if err != nil {
		s.Error = err.Error()
	}
	t.lock()
	t.add(s)
	t.unlock()
	return start.Add(d)
}

// RecordNotRun appends a step of resource that did not run (outcome
// OutcomeSkipped or OutcomeCanceled) without reading the clock: its Start
// is the end of the step recorded last (the Trace's Start when there is
// none) and its Duration 0. It does nothing on a nil t and is safe for
// concurrent use.
func (t *Trace) RecordNotRun(resource, step string, outcome Outcome) {
	if t == nil {
		return
	}
	t.lock()
	start := t.Start
	if n := len(t.Steps); n > 0 {
		start = t.Steps[n-1].Start.Add(t.Steps[n-1].Duration)
	}
	t.add(Step{Resource: resource, Step: step, Outcome: outcome, Start: start})
	t.unlock()
}

// Now returns the current time when t is not nil and the zero time when it is,
// so that recorders read the clock only when they record. It reads only the
// monotonic clock (half the cost of time.Now), adding the time since the
// Trace's Start to it. It reads Start under the Trace's lock: Fold moves the
// Start of a kept trace while a late recorder may ask.
func (t *Trace) Now() time.Time {
	if t == nil {
		return time.Time{}
	}
	t.lock()
	start := t.Start
	t.unlock()
	return start.Add(time.Since(start))
}

// Finish sets Duration (since Start), Result, RequeueAfter and Error (from
// err, when not nil), and returns Duration, so that a caller that needs the
// reconciliation's duration too reads the clock once. It is meant for the
// caller that runs the reconciliation, once the chain has returned. It does
// nothing and returns 0 on a nil t, and is safe for concurrent use.
func (t *Trace) Finish(result string, requeueAfter time.Duration, err error) time.Duration {
	if t == nil {
		return 0
	}
	t.lock()
	defer t.unlock()
	t.Duration = time.Since(t.Start)
	t.Result = result
	t.RequeueAfter = requeueAfter
	if err != nil {
		t.Error = err.Error()
	}
	return t.Duration
}

// Snapshot returns a copy of t, with its own Steps slice, taken under t's
// lock, and t's limit (Limit). The copy is a plain value, detached from any
// context. Snapshot of a nil t returns the zero Trace.
func (t *Trace) Snapshot() Trace {
	if t == nil {
		return Trace{}
	}
	t.lock()
	defer t.unlock()
	return Trace{
		Object:       t.Object,
		ResourceSet:  t.ResourceSet,
		Start:        t.Start,
		Duration:     t.Duration,
		Steps:        append([]Step(nil), t.Steps...),
		Result:       t.Result,
		RequeueAfter: t.RequeueAfter,
		Error:        t.Error,
		Repeats:      t.Repeats,
		FirstStart:   t.FirstStart,
		DroppedSteps: t.DroppedSteps,
		limit:        t.limit,
	}
}

// Reconciliations returns how many reconciliations traces stand for: one
// for each Trace and one for each of its Repeats. Count reconciliations
// with it rather than with len(traces), which counts a run of folded
// repeats (see [Trace.Fold]) once.
func Reconciliations(traces []Trace) int {
	n := 0
	for i := range traces {
		n += 1 + traces[i].Repeats
	}
	return n
}

// Fold makes t, a finished Trace, stand also for newer, the finished
// Trace of the next reconciliation of the same object, when newer went the
// same way: the same resource set, result, requeue delay and error, and
// the same steps (resource, step, outcome and error) in the same order,
// with as many dropped (DroppedSteps).
// Then t takes newer's times (Start, Duration and the steps' times), counts
// newer and the reconciliations newer stood for in Repeats, keeps the
// Start of the first of them in FirstStart, and Fold reports true. When
// newer went another way, or either is nil, Fold changes nothing and
// reports false.
//
// A store of traces calls it before it keeps newer, so that repeated
// reconciliations that change nothing (resyncs, events that need no work)
// take one place instead of pushing older, different traces out. It locks
// t and then newer: callers must not fold two Traces into each other at
// the same time. It allocates nothing.
func (t *Trace) Fold(newer *Trace) bool {
	if t == nil || newer == nil || t == newer {
		return false
	}
	t.lock()
	defer t.unlock()
	newer.lock()
	defer newer.unlock()
	if t.ResourceSet != newer.ResourceSet || t.Result != newer.Result || t.RequeueAfter != newer.RequeueAfter ||
		t.Error != newer.Error || len(t.Steps) != len(newer.Steps) || t.DroppedSteps != newer.DroppedSteps {
		return false
	}
	for i := range t.Steps {
		a, b := &t.Steps[i], &newer.Steps[i]
		if a.Resource != b.Resource || a.Step != b.Step || a.Outcome != b.Outcome || a.Error != b.Error {
			return false
		}
	}
	if t.Repeats == 0 {
		t.FirstStart = t.Start
	}
	t.Repeats += 1 + newer.Repeats
	t.Start, t.Duration = newer.Start, newer.Duration
	for i := range t.Steps {
		t.Steps[i].Start, t.Steps[i].Duration = newer.Steps[i].Start, newer.Steps[i].Duration
	}
	return true
}

// ScanSteps calls f with the Trace's steps, in the order they ended, under
// the Trace's lock, and returns what f returns (f(nil) on a nil t). f must
// neither keep nor change the slice, nor call the Trace's methods. It is
// safe for concurrent use, and reads without the copy of Snapshot.
func (t *Trace) ScanSteps(f func(steps []Step) bool) bool {
	if t == nil {
		return f(nil)
	}
	t.lock()
	defer t.unlock()
	return f(t.Steps)
}

func (t *Trace) lock() {
	if t.mu != nil {
		t.mu.Lock()
	}
}

func (t *Trace) unlock() {
	if t.mu != nil {
		t.mu.Unlock()
	}
}
