package trace_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/trace"
)

func TestRecordWithoutTrace(t *testing.T) {
	ctx := context.Background()
	if trace.FromContext(ctx) != nil {
		t.Fatal("FromContext on a plain context returned a trace")
	}
	if trace.NewContext(ctx, nil) != ctx {
		t.Fatal("NewContext with a nil trace changed the context")
	}
	var nilTrace *trace.Trace
	if !nilTrace.Now().IsZero() {
		t.Fatal("Now on a nil trace read the clock")
	}
	allocs := testing.AllocsPerRun(100, func() {
		trace.Record(ctx, "r", "s", time.Time{}, trace.OutcomeError, errors.New("x"))
	})
	// errors.New above allocates once; Record itself must not.
	if allocs > 1 {
		t.Fatalf("Record without a trace allocated %v times", allocs-1)
	}
	if d := nilTrace.Finish("success", 0, nil); d != 0 {
		t.Errorf("Finish of a nil trace = %v, want 0", d)
	}
	if got := nilTrace.Snapshot(); got.Object != "" || got.Steps != nil {
		t.Fatalf("Snapshot of nil trace = %+v", got)
	}
}

func TestRecord(t *testing.T) {
	tr := &trace.Trace{Object: "default/foo", ResourceSet: "v1"}
	ctx := trace.NewContext(context.Background(), tr)
	if trace.FromContext(ctx) != tr {
		t.Fatal("FromContext did not return the trace")
	}
	if tr.Start.IsZero() {
		t.Fatal("NewContext did not set Start")
	}

	tests := []struct {
		outcome trace.Outcome
		err     error
		wantErr string
	}{
		{outcome: trace.OutcomeDone},
		{outcome: trace.OutcomeSkipped},
		{outcome: trace.OutcomeCanceled},
		{outcome: trace.OutcomeError, err: errors.New("boom"), wantErr: "boom"},
	}
	for i, tt := range tests {
		trace.Record(ctx, "configmap", "get current state", tr.Now(), tt.outcome, tt.err)
		got := tr.Snapshot().Steps[i]
		if got.Resource != "configmap" || got.Step != "get current state" || got.Outcome != tt.outcome || got.Error != tt.wantErr || got.Start.IsZero() || got.Duration < 0 {
			t.Errorf("step %d = %+v", i, got)
		}
	}

	d := tr.Finish("requeue", time.Minute, errors.New("late"))
	snap := tr.Snapshot()
	if snap.Result != "requeue" || snap.RequeueAfter != time.Minute || snap.Error != "late" || snap.Duration <= 0 {
		t.Fatalf("after Finish: %+v", snap)
	}
	if d != snap.Duration {
		t.Errorf("Finish returned %v, the trace's Duration is %v", d, snap.Duration)
	}

	// The snapshot is detached.
	snap.Steps[0].Resource = "changed"
	if tr.Snapshot().Steps[0].Resource != "configmap" {
		t.Fatal("Snapshot shares its Steps with the trace")
	}

	b, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"object":"default/foo"`, `"resourceSet":"v1"`, `"outcome":"error"`, `"error":"boom"`, `"result":"requeue"`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON %s lacks %s", b, want)
		}
	}
}

func TestRecordConcurrent(t *testing.T) {
	tr := &trace.Trace{}
	ctx := trace.NewContext(context.Background(), tr)
	var wg sync.WaitGroup
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			trace.Record(ctx, "r", "s", tr.Now(), trace.OutcomeDone, nil)
			_ = tr.Snapshot()
		}()
	}
	wg.Wait()
	if n := len(tr.Snapshot().Steps); n != 50 {
		t.Fatalf("recorded %d steps, want 50", n)
	}
}

func TestNew(t *testing.T) {
	start := time.Now()
	tr := trace.New("ns/o", start)
	if tr.Object != "ns/o" || !tr.Start.Equal(start) || tr.Len() != 0 {
		t.Fatalf("New = %+v, want object ns/o, the start, no steps", tr.Snapshot())
	}
	ctx := trace.NewContext(context.Background(), tr)
	if trace.FromContext(ctx) != tr {
		t.Fatal("NewContext did not carry the trace")
	}
	for i := range 20 { // beyond the preallocated steps
		trace.Record(ctx, "r", "s"+string(rune('a'+i)), tr.Now(), trace.OutcomeDone, nil)
	}
	s := tr.Snapshot()
	if tr.Len() != 20 || len(s.Steps) != 20 || s.Steps[19].Step != "st" {
		t.Fatalf("Len = %d, %d steps, last %+v; want 20 ending with st", tr.Len(), len(s.Steps), s.Steps[len(s.Steps)-1])
	}
	var nilTrace *trace.Trace
	if nilTrace.Len() != 0 {
		t.Error("Len of a nil trace != 0")
	}
}

func TestNewSized(t *testing.T) {
	start := time.Now()
	for _, n := range []int{-1, 0, 12, 13, 40} { // -1: as 0
		tr := trace.NewSized("ns/o", start, n)
		if tr.Object != "ns/o" || !tr.Start.Equal(start) || tr.Len() != 0 || cap(tr.Steps) < n {
			t.Fatalf("NewSized(%d) = %+v with room for %d steps", n, tr.Snapshot(), cap(tr.Steps))
		}
		ctx := trace.NewContext(context.Background(), tr)
		for range max(n, 0) + 1 {
			trace.Record(ctx, "r", "s", tr.Now(), trace.OutcomeDone, nil)
		}
		if want := max(n, 0) + 1; tr.Len() != want {
			t.Fatalf("NewSized(%d): %d steps recorded, want %d", n, tr.Len(), want)
		}
	}
}

// TestCompactAndRelease: a compacted trace keeps exactly its steps in a
// slice of its own, a released one none; steps recorded late into either
// never land in the buffer the next NewSized trace records into.
func TestCompactAndRelease(t *testing.T) {
	record := func(tr *trace.Trace, steps ...string) {
		for _, s := range steps {
			tr.Record("r", s, tr.Now(), trace.OutcomeError, errors.New(s+" failed"))
		}
	}
	steps := func(tr *trace.Trace) (out []string) {
		snap := tr.Snapshot()
		for _, s := range snap.Steps {
			out = append(out, s.Step+":"+s.Error)
		}
		return out
	}

	kept := trace.NewSized("ns/kept", time.Now(), 8)
	record(kept, "a", "b", "c")
	kept.Compact()
	if got, want := steps(kept), []string{"a:a failed", "b:b failed", "c:c failed"}; !slices.Equal(got, want) {
		t.Fatalf("steps after Compact = %v, want %v", got, want)
	}
	if len(kept.Steps) != cap(kept.Steps) {
		t.Fatalf("Compact kept room for %d steps, %d used", cap(kept.Steps), len(kept.Steps))
	}
	released := trace.NewSized("ns/released", time.Now(), 8)
	record(released, "x")
	released.Release()
	if released.Len() != 0 {
		t.Fatalf("steps after Release = %v, want none", steps(released))
	}

	// The next traces may record into the buffers given back above: late
	// steps of the old traces must not show up in them, nor theirs in the
	// old ones.
	var next []*trace.Trace
	for range 4 {
		tr := trace.NewSized("ns/next", time.Now(), 8)
		record(tr, "n")
		next = append(next, tr)
	}
	record(kept, "late")
	record(released, "late")
	for _, tr := range next {
		if got, want := steps(tr), []string{"n:n failed"}; !slices.Equal(got, want) {
			t.Fatalf("a new trace's steps = %v, want %v", got, want)
		}
	}
	if got, want := steps(kept), []string{"a:a failed", "b:b failed", "c:c failed", "late:late failed"}; !slices.Equal(got, want) {
		t.Fatalf("compacted trace after a late step = %v, want %v", got, want)
	}
	if got, want := steps(released), []string{"late:late failed"}; !slices.Equal(got, want) {
		t.Fatalf("released trace after a late step = %v, want %v", got, want)
	}

	// Compact and Release do nothing on traces without a NewSized buffer.
	var nilTrace *trace.Trace
	nilTrace.Compact()
	nilTrace.Release()
	plain := trace.New("ns/plain", time.Now())
	record(plain, "p")
	plain.Release()
	if plain.Len() != 1 {
		t.Fatalf("Release of a New trace dropped its steps: %v", steps(plain))
	}
}

// TestCompactReusing: the kept trace's steps move into the dropped one's
// slice, which keeps none; a late step of the dropped trace lands in a
// slice of its own; a slice with too little room, or far too much, is not
// used.
func TestCompactReusing(t *testing.T) {
	record := func(tr *trace.Trace, steps ...string) {
		for _, s := range steps {
			tr.Record("r", s, tr.Now(), trace.OutcomeDone, nil)
		}
	}
	stepsOf := func(tr *trace.Trace) (out []string) {
		for _, s := range tr.Snapshot().Steps {
			out = append(out, s.Step)
		}
		return out
	}
	dropped := trace.NewSized("ns/dropped", time.Now(), 8)
	record(dropped, "a", "b", "c")
	dropped.Compact()
	room := &dropped.Steps[:1][0]

	kept := trace.NewSized("ns/kept", time.Now(), 8)
	record(kept, "x", "y")
	kept.CompactReusing(dropped)
	if got, want := stepsOf(kept), []string{"x", "y"}; !slices.Equal(got, want) {
		t.Fatalf("kept steps = %v, want %v", got, want)
	}
	if &kept.Steps[:1][0] != room {
		t.Error("the kept trace's steps are not in the dropped trace's slice")
	}
	if dropped.Len() != 0 {
		t.Fatalf("dropped trace still has steps %v", stepsOf(dropped))
	}
	record(dropped, "late")
	if got, want := stepsOf(kept), []string{"x", "y"}; !slices.Equal(got, want) {
		t.Fatalf("kept steps after a late step of the dropped trace = %v, want %v", got, want)
	}
	if got, want := stepsOf(dropped), []string{"late"}; !slices.Equal(got, want) {
		t.Fatalf("dropped trace after a late step = %v, want %v", got, want)
	}

	// Too small (1 for 2 steps) and too large (8 for 2): a slice of its own.
	for _, n := range []int{1, 8} {
		d := trace.NewSized("ns/d", time.Now(), 8)
		for range n {
			record(d, "s")
		}
		d.Compact()
		other := &d.Steps[:1][0]
		k := trace.NewSized("ns/k", time.Now(), 8)
		record(k, "x", "y")
		k.CompactReusing(d)
		if &k.Steps[:1][0] == other || len(k.Steps) != 2 || cap(k.Steps) != 2 || d.Len() != n {
			t.Errorf("dropped trace of %d steps: kept trace has %d steps with room for %d, dropped %d; want 2, 2 and %d untouched", n, len(k.Steps), cap(k.Steps), d.Len(), n)
		}
	}
	// nil and t itself: Compact.
	self := trace.NewSized("ns/self", time.Now(), 8)
	record(self, "s")
	self.CompactReusing(self)
	self.CompactReusing(nil)
	if got := stepsOf(self); !slices.Equal(got, []string{"s"}) || cap(self.Steps) != 1 {
		t.Fatalf("CompactReusing(self) left steps %v with room for %d", got, cap(self.Steps))
	}
}

// TestCompactReusingWithoutABuffer: a kept trace whose steps are in no
// NewSized buffer (made with New, or compacted already) is left as it is
// (Compact does nothing on it), and the dropped trace keeps its steps; they
// were taken from it, for nothing.
func TestCompactReusingWithoutABuffer(t *testing.T) {
	record := func(tr *trace.Trace, steps ...string) {
		for _, s := range steps {
			tr.Record("r", s, tr.Now(), trace.OutcomeDone, nil)
		}
	}
	compacted := trace.NewSized("ns/compacted", time.Now(), 8)
	record(compacted, "x", "y")
	compacted.Compact()
	plain := trace.New("ns/plain", time.Now())
	record(plain, "x", "y")
	for _, kept := range []*trace.Trace{plain, compacted} {
		dropped := trace.NewSized("ns/dropped", time.Now(), 8)
		record(dropped, "a", "b", "c")
		dropped.Compact()
		room := &dropped.Steps[:1][0]
		kept.CompactReusing(dropped)
		if got := dropped.Snapshot().Steps; len(got) != 3 || got[2].Step != "c" || &dropped.Steps[:1][0] != room {
			t.Errorf("%s.CompactReusing(dropped): dropped has steps %v, want its 3 steps in its own slice", kept.Object, got)
		}
		if got := kept.Snapshot().Steps; len(got) != 2 || got[1].Step != "y" {
			t.Errorf("%s.CompactReusing(dropped): kept has steps %v, want x and y", kept.Object, got)
		}
	}
}

// TestReleaseReusesBuffer: a caller that releases each trace allocates
// about only the Trace itself per NewSized (the race detector's pool drops
// some buffers, hence the margin).
func TestReleaseReusesBuffer(t *testing.T) {
	start := time.Now()
	allocs := testing.AllocsPerRun(1000, func() {
		tr := trace.NewSized("ns/o", start, 20)
		tr.Record("r", "s", start, trace.OutcomeDone, nil)
		tr.Release()
	})
	if allocs >= 1.6 {
		t.Fatalf("NewSized+Release allocates %.2f times per call, want about 1 (the buffer is not reused)", allocs)
	}
}

// TestNowAndRecordNotRun: Now is the wall clock read through the monotonic
// one; a step that did not run starts where the last one ended and takes no
// time.
func TestNowAndRecordNotRun(t *testing.T) {
	tr := trace.New("ns/o", time.Now())
	before := time.Now()
	now := tr.Now()
	after := time.Now()
	if now.Before(before) || now.After(after) {
		t.Fatalf("Now() = %v, want between %v and %v", now, before, after)
	}
	tr.RecordNotRun("r", "first", trace.OutcomeCanceled)
	start := tr.Now()
	tr.Record("r", "ran", start, trace.OutcomeDone, nil)
	tr.RecordNotRun("r", "skipped", trace.OutcomeSkipped)
	s := tr.Snapshot()
	if len(s.Steps) != 3 {
		t.Fatalf("%d steps, want 3", len(s.Steps))
	}
	if first := s.Steps[0]; !first.Start.Equal(tr.Start) || first.Duration != 0 || first.Outcome != trace.OutcomeCanceled {
		t.Errorf("first step not run = %+v, want it at the trace's start, no duration", first)
	}
	ran, skipped := s.Steps[1], s.Steps[2]
	if !skipped.Start.Equal(ran.Start.Add(ran.Duration)) || skipped.Duration != 0 || skipped.Outcome != trace.OutcomeSkipped || skipped.Step != "skipped" {
		t.Errorf("skipped step = %+v, want it where %+v ended, no duration", skipped, ran)
	}
	next := tr.RecordNext("r", "next", skipped.Start, trace.OutcomeDone, nil)
	last := tr.Snapshot().Steps[3]
	if last.Step != "next" || !last.Start.Equal(skipped.Start) || !next.Equal(last.Start.Add(last.Duration)) || next.Before(after) {
		t.Errorf("RecordNext = %v with step %+v, want the step's end, after %v", next, last, after)
	}
	var nilTrace *trace.Trace
	nilTrace.RecordNotRun("r", "s", trace.OutcomeSkipped) // must not panic
	if !nilTrace.RecordNext("r", "s", now, trace.OutcomeDone, nil).IsZero() {
		t.Error("RecordNext of a nil trace is not zero")
	}
	if !nilTrace.Now().IsZero() {
		t.Error("Now of a nil trace is not zero")
	}
}

// finished returns a finished Trace of one reconciliation that started at
// start, with the steps named in steps (each "resource/step").
func finished(start time.Time, result string, err error, steps ...string) *trace.Trace {
	tr := trace.New("ns/a", start)
	tr.ResourceSet = "v1"
	ctx := trace.NewContext(context.Background(), tr)
	for i, s := range steps {
		r, st, _ := strings.Cut(s, "/")
		trace.Record(ctx, r, st, start.Add(time.Duration(i)*time.Millisecond), trace.OutcomeDone, nil)
	}
	tr.Finish(result, 0, err)
	return tr
}

func TestFold(t *testing.T) {
	t0 := time.Unix(1000, 0)
	t.Run("same way", func(t *testing.T) {
		old := finished(t0, "success", nil, "cm/current", "cm/desired")
		newer := finished(t0.Add(time.Minute), "success", nil, "cm/current", "cm/desired")
		if !old.Fold(newer) {
			t.Fatal("Fold of a trace that went the same way = false")
		}
		got := old.Snapshot()
		if got.Repeats != 1 || !got.FirstStart.Equal(t0) || !got.Start.Equal(newer.Start) {
			t.Fatalf("after one fold: Repeats %d FirstStart %v Start %v, want 1, %v, %v", got.Repeats, got.FirstStart, got.Start, t0, newer.Start)
		}
		if !got.Steps[1].Start.Equal(newer.Steps[1].Start) {
			t.Errorf("step times = %v, want the newer trace's %v", got.Steps[1].Start, newer.Steps[1].Start)
		}
		// A newer trace that itself stood for two counts three.
		third := finished(t0.Add(2*time.Minute), "success", nil, "cm/current", "cm/desired")
		third.Repeats, third.FirstStart = 2, t0.Add(90*time.Second)
		if !old.Fold(third) {
			t.Fatal("second Fold = false")
		}
		if got := old.Snapshot(); got.Repeats != 4 || !got.FirstStart.Equal(t0) {
			t.Errorf("after folding a trace with 2 repeats: Repeats %d FirstStart %v, want 4 and %v", got.Repeats, got.FirstStart, t0)
		}
		b, err := json.Marshal(old.Snapshot())
		if err != nil || !strings.Contains(string(b), `"repeats":4`) || !strings.Contains(string(b), `"firstStart":`) {
			t.Errorf("JSON of a folded trace = %s, %v; want repeats and firstStart", b, err)
		}
		b, _ = json.Marshal(newer.Snapshot())
		if strings.Contains(string(b), "repeats") || strings.Contains(string(b), "firstStart") {
			t.Errorf("JSON of a trace standing alone = %s, want no repeats nor firstStart", b)
		}
	})

	other := map[string]func(*trace.Trace){
		"resource set": func(tr *trace.Trace) { tr.ResourceSet = "v2" },
		"result":       func(tr *trace.Trace) { tr.Finish("error", 0, nil) },
		"requeue":      func(tr *trace.Trace) { tr.Finish("success", time.Second, nil) },
		"error":        func(tr *trace.Trace) { tr.Finish("success", 0, errors.New("boom")) },
		"one step more": func(tr *trace.Trace) {
			tr.Record("cm", "apply", time.Now(), trace.OutcomeDone, nil)
		},
		"step resource": func(tr *trace.Trace) { tr.Steps[0].Resource = "secret" },
		"step name":     func(tr *trace.Trace) { tr.Steps[1].Step = "apply" },
		"step outcome":  func(tr *trace.Trace) { tr.Steps[1].Outcome = trace.OutcomeSkipped },
		"step error":    func(tr *trace.Trace) { tr.Steps[1].Error = "boom" },
	}
	for name, change := range other {
		t.Run("another "+name, func(t *testing.T) {
			old := finished(t0, "success", nil, "cm/current", "cm/desired")
			newer := finished(t0.Add(time.Minute), "success", nil, "cm/current", "cm/desired")
			change(newer)
			before := old.Snapshot()
			if old.Fold(newer) {
				t.Fatal("Fold of a trace that went another way = true")
			}
			if after := old.Snapshot(); after.Repeats != 0 || !after.Start.Equal(before.Start) || !after.FirstStart.IsZero() {
				t.Errorf("Fold that reported false changed the trace: %+v", after)
			}
		})
	}

	t.Run("nil and itself", func(t *testing.T) {
		tr := finished(t0, "success", nil, "cm/current")
		var none *trace.Trace
		if tr.Fold(nil) || none.Fold(tr) || tr.Fold(tr) {
			t.Fatal("Fold with nil or with itself = true")
		}
	})

	t.Run("no allocation", func(t *testing.T) {
		old := finished(t0, "success", nil, "cm/current", "cm/desired", "cm/update")
		newer := finished(t0.Add(time.Minute), "success", nil, "cm/current", "cm/desired", "cm/update")
		if allocs := testing.AllocsPerRun(100, func() { old.Fold(newer) }); allocs != 0 {
			t.Fatalf("Fold allocated %v times", allocs)
		}
	})

	t.Run("while a step is recorded", func(t *testing.T) {
		// A resource that ignored the end of its reconciliation may still
		// record into the kept trace; the race detector checks the locks.
		old := finished(t0, "success", nil, "cm/current")
		var wg sync.WaitGroup
		wg.Go(func() {
			for range 100 {
				old.Record("late", "step", time.Now(), trace.OutcomeDone, nil)
			}
		})
		for range 100 {
			old.Fold(finished(t0, "success", nil, "cm/current"))
		}
		wg.Wait()
		if n := len(old.Snapshot().Steps); n != 101 {
			t.Fatalf("steps = %d, want 101", n)
		}
	})
}

func TestReconciliations(t *testing.T) {
	if n := trace.Reconciliations(nil); n != 0 {
		t.Errorf("Reconciliations(nil) = %d, want 0", n)
	}
	traces := []trace.Trace{{Result: "success"}, {Result: "error", Repeats: 3}, {Result: "success"}}
	if n := trace.Reconciliations(traces); n != 6 {
		t.Errorf("Reconciliations of 3 traces, one with 3 repeats = %d, want 6", n)
	}
}

// TestNowWhileFolded: a resource that ignored the end of its reconciliation
// may record into its kept trace (t.Record(..., t.Now(), ...)) while the
// store folds the next reconciliation into it, which moves its Start: a
// data race on Start under -race before Now read it under the lock.
func TestNowWhileFolded(t *testing.T) {
	t0 := time.Unix(1000, 0)
	old := finished(t0, "success", nil, "cm/current")
	var wg sync.WaitGroup
	wg.Go(func() {
		for range 100 {
			old.Record("late", "step", old.Now(), trace.OutcomeDone, nil)
		}
	})
	for range 100 {
		old.Fold(finished(t0, "success", nil, "cm/current"))
	}
	wg.Wait()
	if now := old.Now(); now.Before(t0) {
		t.Errorf("Now() = %s, before the trace's start %s", now, t0)
	}
}

// TestLimit: a Trace with a limit of n keeps its first n-KeptLast steps
// and the last KeptLast recorded (a failed operation and the failed step
// inside it: only the last one, and the stepOf of a framework blamed a
// step of an earlier attempt), counts the others in DroppedSteps (in the JSON too),
// cuts what it held beyond a new limit at once, and folds only into a
// Trace that dropped as many; recorders from many goroutines keep it so.
func TestLimit(t *testing.T) {
	tr := trace.NewSized("ns/a", time.Now(), 4)
	ctx := trace.NewContext(context.Background(), tr)
	for i := range 10 {
		trace.Record(ctx, "r", strings.Repeat("s", i+1), time.Now(), trace.OutcomeDone, nil)
	}
	tr.Limit(4)
	if got := tr.Snapshot(); len(got.Steps) != 4 || got.DroppedSteps != 6 || got.Steps[1].Step != "ss" || got.Steps[2].Step != strings.Repeat("s", 9) || got.Steps[3].Step != strings.Repeat("s", 10) {
		t.Fatalf("after Limit(4) of 10 steps: %d steps, %d dropped, %+v; want the first 2 and the last 2, 6 dropped", len(got.Steps), got.DroppedSteps, got.Steps)
	}
	tr.RecordNotRun("r", "late", trace.OutcomeCanceled)
	if got := tr.Snapshot(); len(got.Steps) != 4 || got.DroppedSteps != 7 || got.Steps[1].Step != "ss" || got.Steps[2].Step != strings.Repeat("s", 10) || got.Steps[3].Step != "late" {
		t.Fatalf("a step past the limit: %d steps, %d dropped, %+v; want 4 (the first 2, the last 2), 7 dropped", len(got.Steps), got.DroppedSteps, got.Steps)
	}
	one := trace.New("ns/a", time.Now())
	ctx1 := trace.NewContext(context.Background(), one)
	for i := range 3 {
		trace.Record(ctx1, "r", strings.Repeat("s", i+1), time.Now(), trace.OutcomeDone, nil)
	}
	one.Limit(1)
	trace.Record(ctx1, "r", "late", time.Now(), trace.OutcomeDone, nil)
	if got := one.Snapshot(); len(got.Steps) != 1 || got.DroppedSteps != 3 || got.Steps[0].Step != "late" {
		t.Fatalf("a limit of 1: %d steps, %d dropped, %+v; want the last alone, 3 dropped", len(got.Steps), got.DroppedSteps, got.Steps)
	}
	b, err := json.Marshal(tr.Snapshot())
	if err != nil || !strings.Contains(string(b), `"droppedSteps":7`) {
		t.Fatalf("JSON = %s, %v; want droppedSteps", b, err)
	}

	same := trace.New("ns/a", time.Now())
	ctx2 := trace.NewContext(context.Background(), same)
	for range 4 {
		trace.Record(ctx2, "r", "s", time.Now(), trace.OutcomeDone, nil)
	}
	other := trace.New("ns/a", time.Now())
	ctx3 := trace.NewContext(context.Background(), other)
	for range 5 {
		trace.Record(ctx3, "r", "s", time.Now(), trace.OutcomeDone, nil)
	}
	other.Limit(4)
	same2 := trace.New("ns/a", time.Now())
	ctx4 := trace.NewContext(context.Background(), same2)
	for range 5 {
		trace.Record(ctx4, "r", "s", time.Now(), trace.OutcomeDone, nil)
	}
	same2.Limit(4)
	if same.Fold(other) {
		t.Error("a Trace folded one that dropped a step it did not")
	}
	if !other.Fold(same2) {
		t.Error("a Trace did not fold one with the same steps and as many dropped")
	}

	conc := trace.New("ns/b", time.Now())
	conc.Limit(8)
	ctx5 := trace.NewContext(context.Background(), conc)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				trace.Record(ctx5, "r", "s", time.Now(), trace.OutcomeDone, nil)
			}
		})
	}
	wg.Wait()
	if got := conc.Snapshot(); len(got.Steps) != 8 || got.DroppedSteps != 392 {
		t.Fatalf("400 concurrent steps into a limit of 8: %d kept, %d dropped", len(got.Steps), got.DroppedSteps)
	}
}
