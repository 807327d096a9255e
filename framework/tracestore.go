package framework

import (
	"container/list"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/operatorkit/operatorkit/internal/printable"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/trace"
)

// MaxStepsPerTrace caps the steps one stored trace keeps; a chain with more
// steps keeps its first MaxStepsPerTrace-trace.KeptLast and its last
// trace.KeptLast, and counts the others in trace.Trace.DroppedSteps (the debug page's text shows a line
// "(N steps dropped)" where they were). Steps that a resource records into
// a kept trace after its reconciliation ended count against it too.
const MaxStepsPerTrace = 64

// droppedAt returns the index of t's step before which the steps it
// dropped (DroppedSteps) were: the first of the last trace.KeptLast.
func droppedAt(t trace.Trace) int {
	return len(t.Steps) - min(trace.KeptLast, len(t.Steps))
}

// maxLiveSteps returns the most steps the trace of a reconciliation in
// progress holds (trace.Trace.Limit), for a Framework whose longest chain
// records about traceSteps: twice that, and at least 4*MaxStepsPerTrace,
// so that only a chain that records a great many (a resource that records
// in a loop, or one retried many times) reaches it. The failure that ends
// a reconciliation is found among the steps held: the trace keeps its last
// steps (trace.KeptLast), the failed operation and the step inside it.
func maxLiveSteps(traceSteps int) int {
	return max(4*MaxStepsPerTrace, 2*traceSteps)
}

// traceStore keeps the last traces of recently reconciled objects: at most
// maxObjects objects (least recently reconciled dropped first), at most
// perObject traces each (oldest dropped first), each trace at most
// MaxStepsPerTrace steps. Objects whose last reconciliation ended without
// an error ("quiet") take at most maxQuiet of the places (half of them):
// many healthy objects do not push out the traces of failing ones, and a
// store that sees no errors holds half as much. A trace that went the way
// the object's last one went is folded into it (trace.Trace.Fold) instead
// of taking a place of its own: a run of no-op reconciliations is one
// trace. A successful trace that changed nothing (changedNothing: a resync
// of an object in sync) of an object the store does not hold takes a
// place only when one is free: a resync of more objects than the store
// holds neither pushes out the traces of the objects whose last
// reconciliation did something, nor churns through the store. A stored trace
// costs about 200 bytes plus 100 per step (its steps are compacted to their
// own slice when it is kept), so the defaults (256 objects x 4 traces, ~10
// steps) stay under about 1.2 MB, and about 0.15 MB when every object is
// quiet (128 objects x one folded trace).
type traceStore struct {
	mu         sync.Mutex
	maxObjects int
	maxQuiet   int
	perObject  int
	// quiet and busy hold the objects whose last trace ended without and
	// with an error, front = most recent.
	quiet, busy *list.List               // of *objectTraces
	byKey       map[string]*list.Element // key -> element in quiet or busy
}

type objectTraces struct {
	key string
	// traces are finished traces, oldest first; read them with Snapshot (a
	// resource that ignored the end of its reconciliation may still
	// record into one).
	traces []*trace.Trace
	plans  []ResourcePlan
	// quiet is set when the last trace ended without an error: the
	// object is in traceStore.quiet.
	quiet bool
}

func newTraceStore(maxObjects, perObject int) *traceStore {
	return &traceStore{maxObjects: maxObjects, maxQuiet: max(1, maxObjects/2), perObject: perObject,
		quiet: list.New(), busy: list.New(), byKey: map[string]*list.Element{}}
}

func (s *traceStore) list(quiet bool) *list.List {
	if quiet {
		return s.quiet
	}
	return s.busy
}

// entry returns key's entry, made the most recent of the quiet or busy
// objects. An object that needs a place when there is none (maxObjects in
// all, or maxQuiet quiet ones for a quiet object) takes over the place of
// the least recently reconciled quiet object, or busy one when no object
// is quiet; entry returns that object's last trace as dropped, for add to
// recycle. An object that turns quiet when maxQuiet are pushes the least
// recent quiet one out the same way.
func (s *traceStore) entry(key string, quiet bool) (ot *objectTraces, dropped *trace.Trace) {
	to := s.list(quiet)
	if e, ok := s.byKey[key]; ok {
		ot = e.Value.(*objectTraces)
		if ot.quiet == quiet {
			to.MoveToFront(e)
			return ot, nil
		}
		s.list(ot.quiet).Remove(e)
		ot.quiet = quiet
		s.byKey[key] = to.PushFront(ot)
		if quiet && to.Len() > s.maxQuiet {
			dropped = s.drop(to.Back())
		}
		return ot, dropped
	}
	if (quiet && s.quiet.Len() >= s.maxQuiet) || s.quiet.Len()+s.busy.Len() >= s.maxObjects { // maxObjects > 0: add and addPlans return before
		from := s.quiet
		if from.Len() == 0 {
			from = s.busy
		}
		e := from.Back()
		ot = e.Value.(*objectTraces)
		dropped = s.forget(ot)
		ot.key, ot.traces, ot.plans, ot.quiet = key, ot.traces[:0], nil, quiet
		if from == to { // the same element, no allocation
			to.MoveToFront(e)
			s.byKey[key] = e
		} else {
			from.Remove(e)
			s.byKey[key] = to.PushFront(ot)
		}
		return ot, dropped
	}
	ot = &objectTraces{key: key, quiet: quiet}
	s.byKey[key] = to.PushFront(ot)
	return ot, nil
}

// drop removes the object of element e and returns its last trace.
func (s *traceStore) drop(e *list.Element) *trace.Trace {
	ot := e.Value.(*objectTraces)
	s.list(ot.quiet).Remove(e)
	return s.forget(ot)
}

// forget removes ot's key and traces, and returns its last trace (nil when
// it has none); ot's element stays where it is, for entry to reuse.
func (s *traceStore) forget(ot *objectTraces) (last *trace.Trace) {
	delete(s.byKey, ot.key)
	if n := len(ot.traces); n > 0 {
		last = ot.traces[n-1]
	}
	clear(ot.traces)
	return last
}

// add keeps tr, the finished trace of a reconciliation of key, or folds it
// into key's last trace, and reports whether the store keeps tr itself
// (rather than folding it, or keeping a shortened copy). A kept tr is
// compacted (trace.Trace.Compact: it holds a slice of exactly its steps),
// into the steps of the trace it pushes out when there is one
// (trace.Trace.CompactReusing), so that a store cycling through more
// objects than it holds does not allocate for each; when add reports
// false, the caller gives tr's step buffer back with Release once it has
// read what it needs from tr.
func (s *traceStore) add(key string, tr *trace.Trace) (kept bool) {
	if s.maxObjects <= 0 {
		return false
	}
	quiet := tr.Error == "" // set by Finish, before add
	keep := tr
	if tr.Len() > MaxStepsPerTrace {
		snap := tr.Snapshot()
		snap.Limit(MaxStepsPerTrace)
		snap.Steps = append(make([]trace.Step, 0, MaxStepsPerTrace), snap.Steps...)
		keep = &snap
	} else {
		tr.Limit(MaxStepsPerTrace) // for steps recorded after the reconciliation
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.byKey[key]; !held && quiet && keep == tr && tr.Result == ResultSuccess &&
		(s.quiet.Len() >= s.maxQuiet || s.quiet.Len()+s.busy.Len() >= s.maxObjects) &&
		tr.ScanSteps(changedNothing) { // last: only when it decides (s.mu before a trace's lock, as Fold)
		return false // no free place, and nothing worth another object's
	}
	ot, dropped := s.entry(key, quiet)
	if n := len(ot.traces); n > 0 && ot.traces[n-1].Fold(keep) {
		// The same as the last one (a no-op resync, say): one place for
		// both, so that repeats do not push the different traces out.
		return false
	}
	if len(ot.traces) >= s.perObject {
		dropped = ot.traces[0]
		copy(ot.traces, ot.traces[1:])
		ot.traces = ot.traces[:len(ot.traces)-1]
	}
	ot.traces = append(ot.traces, keep)
	if keep != tr {
		return false
	}
	tr.CompactReusing(dropped)
	return true
}

// changedNothing reports whether the steps of a successful reconciliation
// show that it changed nothing: every resource that ran is a crud resource
// (resource/crud) whose apply steps were all skipped, and the Framework
// wrote neither the status nor its finalizer. A plain resource's "ensure created" may have
// written anything: a trace with one is taken as a change, as is one with a
// step this function does not know.
func changedNothing(steps []trace.Step) bool {
	var crudNames [8]string // the crud resources seen; a longer chain counts as a change
	n := 0
	isCrud := func(name string) bool {
		for _, c := range crudNames[:n] {
			if c == name {
				return true
			}
		}
		return false
	}
	for i := range steps {
		st := &steps[i] // a Step is about 100 bytes: no copy of each
		switch st.Step {
		case crud.StepGetCurrentState, crud.StepGetDesiredState, crud.StepNewUpdatePatch, crud.StepNewDeletePatch:
			if !isCrud(st.Resource) {
				if n == len(crudNames) {
					return false
				}
				crudNames[n] = st.Resource
				n++
			}
		case crud.StepApplyCreateChange, crud.StepApplyUpdateChange, crud.StepApplyDeleteChange, StepWriteStatus, StepAddFinalizer, StepRemoveFinalizer:
			if st.Outcome != trace.OutcomeSkipped {
				return false
			}
		case resource.OperationEnsureCreated, resource.OperationEnsureDeleted:
			if !isCrud(st.Resource) {
				return false
			}
		case StepLockCondition:
			// Reading the conditions writes nothing.
		default:
			return false
		}
	}
	return true
}

// addPlans keeps plans as key's last dry-run plan; nil plans drop the one
// kept, without taking a place for key.
func (s *traceStore) addPlans(key string, plans []ResourcePlan) {
	if s.maxObjects <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if plans == nil {
		if e, ok := s.byKey[key]; ok {
			e.Value.(*objectTraces).plans = nil
		}
		return
	}
	ot, _ := s.entry(key, false)
	ot.plans = plans
}

func (s *traceStore) get(key string) ([]trace.Trace, []ResourcePlan) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.byKey[key]
	if !ok {
		return nil, nil
	}
	ot := e.Value.(*objectTraces)
	out := make([]trace.Trace, len(ot.traces))
	for i, t := range ot.traces {
		out[i] = t.Snapshot()
	}
	return out, ot.plans
}

// ObjectSummary is one line of the list of recently reconciled objects.
type ObjectSummary struct {
	// Controller is the name of the Framework that reconciled the object
	// (Config.Name, the controller label of its metrics): an operator
	// with several Frameworks lists the objects of all of them, and two
	// may have an object of the same key.
	Controller string `json:"controller"`
	// Object is the object's key, "namespace/name" (or "name").
	Object string `json:"object"`
	// ResourceSet is the name of the resource set that ran the object's
	// last reconciliation; empty when none did (no_resource_set) or the
	// set has no name.
	ResourceSet string `json:"resourceSet,omitempty"`
	// Result is the last reconciliation's result, one of the Result*
	// constants.
	Result string `json:"result"`
	// Start is when the last reconciliation started.
	Start time.Time `json:"start"`
	// Duration is how long the last reconciliation took.
	Duration time.Duration `json:"duration"`
	// Error is the last reconciliation's error message; empty after a
	// success.
	Error string `json:"error,omitempty"`
	// Repeats is how many reconciliations before the last one went the
	// same way, one after the other (trace.Trace.Repeats).
	Repeats int `json:"repeats,omitempty"`
}

// summaries lists the stored objects, most recently reconciled first.
func (s *traceStore) summaries() []ObjectSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ObjectSummary, 0, s.quiet.Len()+s.busy.Len())
	for _, l := range []*list.List{s.quiet, s.busy} {
		for e := l.Front(); e != nil; e = e.Next() {
			ot := e.Value.(*objectTraces)
			if len(ot.traces) == 0 {
				continue
			}
			t := ot.traces[len(ot.traces)-1].Snapshot()
			out = append(out, ObjectSummary{Object: ot.key, ResourceSet: t.ResourceSet, Result: t.Result, Start: t.Start, Duration: t.Duration, Error: t.Error, Repeats: t.Repeats})
		}
	}
	// The two lists are each in that order: merge them.
	slices.SortStableFunc(out, func(a, b ObjectSummary) int { return b.Start.Compare(a.Start) })
	return out
}

func (s *traceStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.quiet.Len() + s.busy.Len()
}

// Traces returns the last traces of the object with key "namespace/name",
// oldest first, or nil when none is kept (never reconciled, or dropped from
// the bounded store). The traces are copies.
func (f *Framework) Traces(key string) []trace.Trace {
	t, _ := f.traces.get(key)
	return t
}

// Plans returns the plans computed by the last dry-run reconciliation of the
// object with key (Config.DryRun): when a resource's error stopped it (the
// error is in the object's last trace), the plans of the resources before
// that one. It returns nil when that reconciliation planned nothing (no
// resource set handles the object, or its set's InitCtx failed), and when
// none is kept (as for Traces).
func (f *Framework) Plans(key string) []ResourcePlan {
	_, p := f.traces.get(key)
	return p
}

// traceLine formats a trace on one line for the debug log. It is a
// fmt.Stringer so that it is formatted only when the line is written.
type traceLine struct{ t *trace.Trace }

func (l traceLine) String() string {
	s := l.t.Snapshot()
	var b strings.Builder
	fmt.Fprintf(&b, "set=%s result=%s duration=%s", s.ResourceSet, s.Result, s.Duration)
	for i, st := range s.Steps {
		if s.DroppedSteps > 0 && i == droppedAt(s) {
			fmt.Fprintf(&b, " [%d steps dropped]", s.DroppedSteps)
		}
		fmt.Fprintf(&b, " [%s %s %s %s]", st.Resource, st.Step, st.Outcome, st.Duration)
	}
	return b.String()
}

// formatTrace writes a readable multi-line form of t: a header line, the
// trace's error on a line of its own, and a line per step. Control
// characters in names and errors (the lines of a multi-line error) are
// escaped (textField), so that every line is one of these.
func formatTrace(b *strings.Builder, t trace.Trace) {
	fmt.Fprintf(b, "%s  %s  set=%s  result=%s  duration=%s", t.Start.Format(time.RFC3339Nano), textField(t.Object), textField(t.ResourceSet), textField(t.Result), t.Duration)
	if t.RequeueAfter > 0 {
		fmt.Fprintf(b, "  requeueAfter=%s", t.RequeueAfter)
	}
	if t.Repeats > 0 {
		fmt.Fprintf(b, "  repeated=%d since=%s", t.Repeats, t.FirstStart.Format(time.RFC3339Nano))
	}
	b.WriteByte('\n')
	if t.Error != "" {
		fmt.Fprintf(b, "  error: %s\n", textField(t.Error))
	}
	for i, st := range t.Steps {
		if t.DroppedSteps > 0 && i == droppedAt(t) {
			fmt.Fprintf(b, "  (%d steps dropped)\n", t.DroppedSteps)
		}
		fmt.Fprintf(b, "  %-24s %-20s %-8s %10s", textField(st.Resource), textField(st.Step), st.Outcome, st.Duration)
		if st.Error != "" {
			fmt.Fprintf(b, "  %s", textField(st.Error))
		}
		b.WriteByte('\n')
	}
}

// formatSummaries writes the debug endpoint's text index: a header line
// and one line per object, with names and errors as textField writes them;
// with controller, a first column names each object's Framework.
func formatSummaries(b *strings.Builder, list []ObjectSummary, controller bool) {
	if controller {
		fmt.Fprintf(b, "%-16s ", "CONTROLLER")
	}
	fmt.Fprintf(b, "%-50s %-10s %-16s %12s  %s\n", "OBJECT", "SET", "RESULT", "DURATION", "ERROR")
	for _, s := range list {
		if controller {
			fmt.Fprintf(b, "%-16s ", textField(s.Controller))
		}
		fmt.Fprintf(b, "%-50s %-10s %-16s %12s  %s\n", textField(s.Object), textField(s.ResourceSet), textField(s.Result), s.Duration, textField(s.Error))
	}
}

// textField returns s with its control characters (newlines, tabs, ...)
// escaped as in a Go string literal ("\n"), so that a field of the text
// format never breaks or forges its lines; other text is kept as it is.
func textField(s string) string { return printable.Escape(s) }
