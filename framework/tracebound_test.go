package framework

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/trace"
)

// TestTraceStoreBoundsEveryTrace: a trace the store kept stays within
// MaxStepsPerTrace when a resource that ignored the end of its
// reconciliation records into it later (it grew without bound, against
// the store's "memory bounded"), and a trace cut to MaxStepsPerTrace says
// how many steps were dropped, in DroppedSteps and in the debug page's
// text and log line, where its first steps and its last trace.KeptLast
// were shown as if they were all.
func TestTraceStoreBoundsEveryTrace(t *testing.T) {
	s := newTraceStore(10, 3)

	kept := trace.NewSized("ns/a", time.Now(), 8)
	ctx := trace.NewContext(context.Background(), kept)
	trace.Record(ctx, "r", "ensure created", time.Now(), trace.OutcomeDone, nil)
	kept.Finish(ResultSuccess, 0, nil)
	if !s.add("ns/a", kept) {
		t.Fatal("the store did not keep a trace of one step")
	}
	const late = 1000
	for range late {
		trace.Record(ctx, "late", "step", time.Now(), trace.OutcomeDone, nil)
	}
	traces, _ := s.get("ns/a")
	if got := traces[0]; len(got.Steps) != MaxStepsPerTrace || got.DroppedSteps != 1+late-MaxStepsPerTrace ||
		got.Steps[0].Resource != "r" || got.Steps[MaxStepsPerTrace-1].Resource != "late" {
		t.Errorf("kept trace after %d late steps: %d steps, %d dropped; want %d, %d dropped, its first and its last", late, len(got.Steps), got.DroppedSteps, MaxStepsPerTrace, 1+late-MaxStepsPerTrace)
	}

	long := trace.NewSized("ns/b", time.Now(), 8)
	ctx = trace.NewContext(context.Background(), long)
	const n = MaxStepsPerTrace + 36
	for i := range n {
		res := "r"
		if i == n-1 {
			res = "last"
		}
		trace.Record(ctx, res, "step", time.Now(), trace.OutcomeDone, nil)
	}
	long.Finish(ResultSuccess, 0, nil)
	s.add("ns/b", long)
	traces, _ = s.get("ns/b")
	got := traces[0]
	if len(got.Steps) != MaxStepsPerTrace || got.DroppedSteps != 36 || got.Steps[MaxStepsPerTrace-1].Resource != "last" {
		t.Fatalf("trace of %d steps kept with %d steps, %d dropped, last %q; want %d, 36 dropped, the last", n, len(got.Steps), got.DroppedSteps, got.Steps[len(got.Steps)-1].Resource, MaxStepsPerTrace)
	}
	var b strings.Builder
	formatTrace(&b, got)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) < 4 || !strings.Contains(lines[len(lines)-3], "36 steps dropped") || !strings.Contains(lines[len(lines)-1], "last") {
		t.Errorf("text of the cut trace, want a line saying 36 steps dropped before the last two steps:\n%s", b.String())
	}
	if line := (traceLine{&got}).String(); !regexp.MustCompile(`\[36 steps dropped\] \[r step done [^]]*\] \[last step done [^]]*\]$`).MatchString(line) {
		t.Errorf("debug log line of the cut trace = %q, want [36 steps dropped] before the last two steps", line)
	}
}

// TestReconciliationTraceIsBounded: a resource that records a great many
// steps (a pathological chain) grows its reconciliation's trace no further
// than maxLiveSteps: it kept every step until the reconciliation ended.
func TestReconciliationTraceIsBounded(t *testing.T) {
	const recorded = 20000
	var live int
	r := &funcResource{name: "loop", create: func(ctx context.Context, _ any) error {
		for range recorded {
			trace.Record(ctx, "loop", "step", time.Now(), trace.OutcomeDone, nil)
		}
		live = trace.FromContext(ctx).Len()
		return nil
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	if want := maxLiveSteps(st.f.traceSteps); live > want {
		t.Errorf("trace during the reconciliation held %d steps, want at most %d", live, want)
	}
	if len(tr.Steps) != MaxStepsPerTrace || tr.DroppedSteps < recorded-MaxStepsPerTrace {
		t.Errorf("kept trace: %d steps, %d dropped; want %d and at least %d dropped", len(tr.Steps), tr.DroppedSteps, MaxStepsPerTrace, recorded-MaxStepsPerTrace)
	}
}
