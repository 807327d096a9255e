package framework

import (
	"container/list"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/operatorkit/operatorkit/trace"
)

// MaxStepsPerTrace caps the steps one stored trace keeps; a chain with more
// steps keeps its first MaxStepsPerTrace-1 and its last one.
const MaxStepsPerTrace = 64

// traceStore keeps the last traces of recently reconciled objects: at most
// maxObjects objects (least recently reconciled dropped first), at most
// perObject traces each (oldest dropped first), each trace at most
// MaxStepsPerTrace steps. A trace that went the way the object's last one
// went is folded into it (trace.Trace.Fold) instead of taking a place of
// its own: a run of no-op reconciliations is one trace. A stored trace
// costs about 200 bytes plus 100 per step (its steps are compacted to their
// own slice when it is kept), so the defaults (256 objects x 4 traces, ~10
// steps) stay under about 1.2 MB.
type traceStore struct {
	mu         sync.Mutex
	maxObjects int
	perObject  int
	lru        *list.List               // of *objectTraces, front = most recent
	byKey      map[string]*list.Element // key -> element in lru
}

type objectTraces struct {
	key string
	// traces are finished traces, oldest first; read them with Snapshot (a
	// resource that ignored the end of its reconciliation may still
	// record into one).
	traces []*trace.Trace
	plans  []ResourcePlan
}

func newTraceStore(maxObjects, perObject int) *traceStore {
	return &traceStore{maxObjects: maxObjects, perObject: perObject, lru: list.New(), byKey: map[string]*list.Element{}}
}

// entry returns key's entry, made most recent. A new entry in a full store
// takes over the least recently reconciled object's place; entry returns
// that object's last trace as dropped, for add to recycle.
func (s *traceStore) entry(key string) (ot *objectTraces, dropped *trace.Trace) {
	if e, ok := s.byKey[key]; ok {
		s.lru.MoveToFront(e)
		return e.Value.(*objectTraces), nil
	}
	if s.lru.Len() >= s.maxObjects { // maxObjects > 0: add and addPlans return before
		e := s.lru.Back()
		ot = e.Value.(*objectTraces)
		delete(s.byKey, ot.key)
		if n := len(ot.traces); n > 0 {
			dropped = ot.traces[n-1]
		}
		clear(ot.traces)
		ot.key, ot.traces, ot.plans = key, ot.traces[:0], nil
		s.lru.MoveToFront(e)
		s.byKey[key] = e
		return ot, dropped
	}
	ot = &objectTraces{key: key}
	s.byKey[key] = s.lru.PushFront(ot)
	return ot, nil
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
	keep := tr
	if tr.Len() > MaxStepsPerTrace {
		snap := tr.Snapshot()
		n := len(snap.Steps)
		snap.Steps = append(snap.Steps[:MaxStepsPerTrace-1:MaxStepsPerTrace-1], snap.Steps[n-1])
		keep = &snap
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ot, dropped := s.entry(key)
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

func (s *traceStore) addPlans(key string, plans []ResourcePlan) {
	if s.maxObjects <= 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ot, _ := s.entry(key)
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
	Object      string        `json:"object"`
	ResourceSet string        `json:"resourceSet,omitempty"`
	Result      string        `json:"result"`
	Start       time.Time     `json:"start"`
	Duration    time.Duration `json:"duration"`
	Error       string        `json:"error,omitempty"`
	// Repeats is how many reconciliations before the last one went the
	// same way, one after the other (trace.Trace.Repeats).
	Repeats int `json:"repeats,omitempty"`
}

// summaries lists the stored objects, most recently reconciled first.
func (s *traceStore) summaries() []ObjectSummary {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]ObjectSummary, 0, s.lru.Len())
	for e := s.lru.Front(); e != nil; e = e.Next() {
		ot := e.Value.(*objectTraces)
		if len(ot.traces) == 0 {
			continue
		}
		t := ot.traces[len(ot.traces)-1].Snapshot()
		out = append(out, ObjectSummary{Object: ot.key, ResourceSet: t.ResourceSet, Result: t.Result, Start: t.Start, Duration: t.Duration, Error: t.Error, Repeats: t.Repeats})
	}
	return out
}

func (s *traceStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lru.Len()
}

// Traces returns the last traces of the object with key "namespace/name",
// oldest first, or nil when none is kept (never reconciled, or dropped from
// the bounded store). The traces are copies.
func (f *Framework) Traces(key string) []trace.Trace {
	t, _ := f.traces.get(key)
	return t
}

// Plans returns the plans computed by the last dry-run reconciliation of the
// object with key (Config.DryRun), or nil.
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
	for _, st := range s.Steps {
		fmt.Fprintf(&b, " [%s %s %s %s]", st.Resource, st.Step, st.Outcome, st.Duration)
	}
	return b.String()
}

// formatTrace writes a readable multi-line form of t.
func formatTrace(b *strings.Builder, t trace.Trace) {
	fmt.Fprintf(b, "%s  %s  set=%s  result=%s  duration=%s", t.Start.Format(time.RFC3339Nano), t.Object, t.ResourceSet, t.Result, t.Duration)
	if t.RequeueAfter > 0 {
		fmt.Fprintf(b, "  requeueAfter=%s", t.RequeueAfter)
	}
	if t.Repeats > 0 {
		fmt.Fprintf(b, "  repeated=%d since=%s", t.Repeats, t.FirstStart.Format(time.RFC3339Nano))
	}
	b.WriteByte('\n')
	if t.Error != "" {
		fmt.Fprintf(b, "  error: %s\n", t.Error)
	}
	for _, st := range t.Steps {
		fmt.Fprintf(b, "  %-24s %-20s %-8s %10s", st.Resource, st.Step, st.Outcome, st.Duration)
		if st.Error != "" {
			fmt.Fprintf(b, "  %s", st.Error)
		}
		b.WriteByte('\n')
	}
}
