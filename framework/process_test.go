package framework_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/goleak"

	"github.com/operatorkit/operatorkit/context/deletionallowedcontext"
	"github.com/operatorkit/operatorkit/context/finalizerskeptcontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/context/updateallowedcontext"
	"github.com/operatorkit/operatorkit/context/updatenecessarycontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var errBoom = errors.New("boom")

// recorder collects "<resource> <operation>" of every call of its resources.
type recorder struct {
	mu    sync.Mutex
	calls []string
}

func (rec *recorder) Calls() []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return slices.Clone(rec.calls)
}

// fake is a resource whose operations run do.
type fake struct {
	name string
	rec  *recorder
	do   func(ctx context.Context) error
}

func (f *fake) Name() string { return f.name }

func (f *fake) EnsureCreated(ctx context.Context, _ any) error {
	return f.call(ctx, resource.OperationEnsureCreated)
}

func (f *fake) EnsureDeleted(ctx context.Context, _ any) error {
	return f.call(ctx, resource.OperationEnsureDeleted)
}

func (f *fake) call(ctx context.Context, op string) error {
	f.rec.mu.Lock()
	f.rec.calls = append(f.rec.calls, f.name+" "+op)
	f.rec.mu.Unlock()
	if f.do == nil {
		return nil
	}
	return f.do(ctx)
}

// chain returns resources a, b and c, where do[name] is the behaviour of
// resource name.
func chain(rec *recorder, do map[string]func(context.Context) error) []resource.Interface {
	var rs []resource.Interface
	for _, name := range []string{"a", "b", "c"} {
		rs = append(rs, &fake{name: name, rec: rec, do: do[name]})
	}
	return rs
}

type process struct {
	name string
	fn   func(context.Context, any, []resource.Interface) error
	op   string
}

var processes = []process{
	{"ProcessUpdate", framework.ProcessUpdate, resource.OperationEnsureCreated},
	{"ProcessDelete", framework.ProcessDelete, resource.OperationEnsureDeleted},
}

func TestProcess(t *testing.T) {
	panicErr := errors.New("panic with an error")
	tests := []struct {
		name      string
		do        map[string]func(context.Context) error
		wantRun   []string
		wantErr   []error // all must match
		wantNoErr bool
		check     func(t *testing.T, err error)
	}{
		{
			name:      "all succeed in order",
			wantRun:   []string{"a", "b", "c"},
			wantNoErr: true,
		},
		{
			name:    "first error stops the chain",
			do:      map[string]func(context.Context) error{"b": func(context.Context) error { return errBoom }},
			wantRun: []string{"a", "b"},
			wantErr: []error{framework.ErrExecutionFailed, errBoom},
			check: func(t *testing.T, err error) {
				var ee *framework.ExecutionError
				if !errors.As(err, &ee) || ee.Resource != "b" {
					t.Fatalf("error %v is not an ExecutionError of b", err)
				}
				if !strings.HasSuffix(err.Error(), " b: boom") || !strings.HasPrefix(err.Error(), ee.Operation) {
					t.Fatalf("error message %q", err)
				}
			},
		},
		{
			name: "reconciliation canceled stops the chain with nil",
			do: map[string]func(context.Context) error{"b": func(ctx context.Context) error {
				reconciliationcanceledcontext.SetCanceled(ctx)
				return nil
			}},
			wantRun:   []string{"a", "b"},
			wantNoErr: true,
		},
		{
			name: "resource canceled skips only that resource",
			do: map[string]func(context.Context) error{
				"a": func(ctx context.Context) error {
					resourcecanceledcontext.SetCanceled(ctx)
					return nil
				},
				"b": func(ctx context.Context) error {
					if resourcecanceledcontext.IsCanceled(ctx) {
						return errors.New("b got a canceled signal")
					}
					return nil
				},
			},
			wantRun:   []string{"a", "b", "c"},
			wantNoErr: true,
		},
		{
			name:    "panic is recovered",
			do:      map[string]func(context.Context) error{"b": func(context.Context) error { panic("oops") }},
			wantRun: []string{"a", "b"},
			wantErr: []error{framework.ErrExecutionFailed, framework.ErrPanic},
			check: func(t *testing.T, err error) {
				var pe *framework.PanicError
				if !errors.As(err, &pe) || pe.Resource != "b" || pe.Value != "oops" || !strings.Contains(string(pe.Stack), "panic") {
					t.Fatalf("error %v is not a PanicError of b with value and stack", err)
				}
				if !strings.HasSuffix(err.Error(), " b: panic: oops") {
					t.Fatalf("error message %q", err)
				}
			},
		},
		{
			name:    "panic with an error unwraps to it",
			do:      map[string]func(context.Context) error{"a": func(context.Context) error { panic(panicErr) }},
			wantRun: []string{"a"},
			wantErr: []error{framework.ErrExecutionFailed, framework.ErrPanic, panicErr},
		},
	}
	for _, p := range processes {
		for _, tt := range tests {
			t.Run(p.name+"/"+tt.name, func(t *testing.T) {
				rec := &recorder{}
				err := p.fn(context.Background(), nil, chain(rec, tt.do))
				if tt.wantNoErr && err != nil {
					t.Fatalf("%s() = %v, want nil", p.name, err)
				}
				for _, want := range tt.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("%s() = %v, want it to match %v", p.name, err, want)
					}
				}
				if framework.IsExecutionFailed(err) != !tt.wantNoErr {
					t.Errorf("IsExecutionFailed(%v) = %v", err, !tt.wantNoErr)
				}
				var want []string
				for _, name := range tt.wantRun {
					want = append(want, name+" "+p.op)
				}
				if got := rec.Calls(); !slices.Equal(got, want) {
					t.Fatalf("calls = %v, want %v", got, want)
				}
				if tt.check != nil {
					tt.check(t, err)
				}
			})
		}
	}
}

func TestProcessCanceledBeforeStart(t *testing.T) {
	for _, p := range processes {
		t.Run(p.name, func(t *testing.T) {
			ctx := reconciliationcanceledcontext.NewContext(context.Background())
			reconciliationcanceledcontext.SetCanceled(ctx)
			rec := &recorder{}
			if err := p.fn(ctx, nil, chain(rec, nil)); err != nil || len(rec.Calls()) != 0 {
				t.Fatalf("%s() = %v, calls %v; want nil and no calls", p.name, err, rec.Calls())
			}
		})
	}
}

func TestProcessNilResource(t *testing.T) {
	rec := &recorder{}
	rs := append(chain(rec, nil), nil)
	err := framework.ProcessUpdate(context.Background(), nil, rs)
	if !framework.IsInvalidConfig(err) || !strings.Contains(err.Error(), "resources[3]") || len(rec.Calls()) != 0 {
		t.Fatalf("ProcessUpdate() = %v, calls %v; want invalid config naming resources[3] and no calls", err, rec.Calls())
	}
}

// TestProcessNilPointerResource: a nil pointer in resources (a
// *crud.Resource that was never made) is a nil entry too, reported as
// invalid config before anything runs, by ProcessUpdate and ProcessDelete
// alike. It panicked out of both, past their recover, whose PanicError
// asked the nil resource for its Name.
func TestProcessNilPointerResource(t *testing.T) {
	for _, p := range processes {
		t.Run(p.name, func(t *testing.T) {
			rec := &recorder{}
			var never *crud.Resource
			rs := append(chain(rec, nil), never)
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("%s() panicked: %v", p.name, v)
					}
				}()
				err = p.fn(context.Background(), nil, rs)
			}()
			if !framework.IsInvalidConfig(err) || !strings.Contains(err.Error(), "resources[3]") || len(rec.Calls()) != 0 {
				t.Fatalf("%s() = %v, calls %v; want invalid config naming resources[3] and no calls", p.name, err, rec.Calls())
			}
		})
	}
}

// TestProcessSignals checks that every signal exists for resources, also when
// the caller created none, and that signals the caller created are used.
func TestProcessSignals(t *testing.T) {
	set := func(ctx context.Context) error {
		finalizerskeptcontext.SetKept(ctx)
		requeuecontext.SetRequeueAfter(ctx, time.Minute)
		updateallowedcontext.SetUpdateAllowed(ctx)
		deletionallowedcontext.SetDeletionAllowed(ctx)
		updatenecessarycontext.SetUpdateNecessary(ctx)
		resourcecanceledcontext.SetCanceled(ctx)
		return nil
	}
	check := func(ctx context.Context) error {
		var missing []string
		for name, ok := range map[string]bool{
			"finalizers kept":  finalizerskeptcontext.IsKept(ctx),
			"update allowed":   updateallowedcontext.IsUpdateAllowed(ctx),
			"deletion allowed": deletionallowedcontext.IsDeletionAllowed(ctx),
			"update necessary": updatenecessarycontext.IsUpdateNecessary(ctx),
		} {
			if !ok {
				missing = append(missing, name)
			}
		}
		if d, ok := requeuecontext.RequeueAfter(ctx); !ok || d != time.Minute {
			missing = append(missing, "requeue")
		}
		if resourcecanceledcontext.IsCanceled(ctx) {
			return errors.New("resource canceled leaked to the next resource")
		}
		reconciliationcanceledcontext.SetCanceled(ctx)
		if !reconciliationcanceledcontext.IsCanceled(ctx) {
			missing = append(missing, "reconciliation canceled")
		}
		if len(missing) > 0 {
			return fmt.Errorf("signals missing: %v", missing)
		}
		return nil
	}
	for _, p := range processes {
		t.Run(p.name+"/created when missing", func(t *testing.T) {
			rec := &recorder{}
			err := p.fn(context.Background(), nil, chain(rec, map[string]func(context.Context) error{"a": set, "b": check}))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(rec.Calls()); got != 2 {
				t.Fatalf("%d resources ran, want 2 (c after reconciliation canceled)", got)
			}
		})
		t.Run(p.name+"/caller's signals are used", func(t *testing.T) {
			ctx := finalizerskeptcontext.NewContext(requeuecontext.NewContext(context.Background()))
			err := p.fn(ctx, nil, chain(&recorder{}, map[string]func(context.Context) error{"a": set}))
			if err != nil {
				t.Fatal(err)
			}
			if !finalizerskeptcontext.IsKept(ctx) {
				t.Error("finalizers kept did not reach the caller")
			}
			if d, ok := requeuecontext.RequeueAfter(ctx); !ok || d != time.Minute {
				t.Errorf("RequeueAfter() = %v, %v; want 1m, true", d, ok)
			}
		})
	}
}

func TestProcessTrace(t *testing.T) {
	ops := &crudtest.Ops{Resource: "b"}
	b, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	rs := []resource.Interface{
		&fake{name: "a", rec: rec},
		b,
		&fake{name: "c", rec: rec, do: func(ctx context.Context) error {
			reconciliationcanceledcontext.SetCanceled(ctx)
			return errBoom
		}},
		&fake{name: "d", rec: rec},
	}
	tr := &trace.Trace{Object: "default/foo"}
	ctx := trace.NewContext(context.Background(), tr)
	if err := framework.ProcessUpdate(ctx, nil, rs); !errors.Is(err, errBoom) {
		t.Fatalf("ProcessUpdate() = %v, want %v", err, errBoom)
	}
	var got []string
	for _, s := range tr.Snapshot().Steps {
		got = append(got, s.Resource+" "+s.Step+" "+string(s.Outcome))
	}
	want := []string{
		"a ensure created done",
		"b get current state done",
		"b get desired state done",
		"b new update patch done",
		"b apply create change skipped",
		"b apply update change skipped",
		"b apply delete change skipped",
		"b ensure created done",
		"c ensure created error",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trace steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// One clock read per resource: each resource's step starts where the
	// resource before it ended.
	steps := tr.Snapshot().Steps
	if a, b := steps[0], steps[7]; !b.Start.Equal(a.Start.Add(a.Duration)) {
		t.Errorf("b's step starts at %v, not where a's ended (%v)", b.Start, a.Start.Add(a.Duration))
	}
	if b, c := steps[7], steps[8]; !c.Start.Equal(b.Start.Add(b.Duration)) {
		t.Errorf("c's step starts at %v, not where b's ended (%v)", c.Start, b.Start.Add(b.Duration))
	}

	// A canceled reconciliation records the resource that did not run.
	tr = &trace.Trace{}
	ctx = trace.NewContext(context.Background(), tr)
	rs[2].(*fake).do = func(ctx context.Context) error {
		reconciliationcanceledcontext.SetCanceled(ctx)
		return nil
	}
	if err := framework.ProcessDelete(ctx, nil, rs); err != nil {
		t.Fatal(err)
	}
	steps = tr.Snapshot().Steps
	if last := steps[len(steps)-1]; last.Resource != "d" || last.Outcome != trace.OutcomeCanceled || last.Step != resource.OperationEnsureDeleted {
		t.Fatalf("last step = %+v, want d ensure deleted canceled", last)
	}
}

// TestProcessConcurrent runs the same resources for 50 objects at once, as
// the framework's workers do.
func TestProcessConcurrent(t *testing.T) {
	rs := chain(&recorder{}, map[string]func(context.Context) error{
		"a": func(ctx context.Context) error {
			requeuecontext.SetRequeueAfter(ctx, time.Second)
			resourcecanceledcontext.SetCanceled(ctx)
			return nil
		},
		"b": func(ctx context.Context) error {
			if resourcecanceledcontext.IsCanceled(ctx) {
				return errors.New("resource canceled leaked")
			}
			return nil
		},
	})
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- framework.ProcessUpdate(context.Background(), nil, rs)
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestDefaultBackOffFactory(t *testing.T) {
	factory := framework.DefaultBackOffFactory()
	b := factory()
	var n int
	var total time.Duration
	for d := b.NextBackOff(); d != backoff.Stop; d = b.NextBackOff() {
		if d <= 0 || d > 45*time.Second {
			t.Fatalf("interval %d = %v, want within (0, 45s]", n, d)
		}
		total += d
		n++
		if n > 100 {
			t.Fatal("backoff does not stop")
		}
	}
	if n != 10 {
		t.Fatalf("backoff allows %d retries, want 10", n)
	}
	if factory() == b {
		t.Fatal("factory returns the same backoff twice")
	}
}

func TestDefaultResourceSetResourceFunc(t *testing.T) {
	rs := chain(&recorder{}, nil)
	got, err := framework.DefaultResourceSetResourceFunc(rs)(context.Background(), "anything")
	if err != nil || !slices.Equal(got, rs) {
		t.Fatalf("got %v, %v; want %v, nil", got, err, rs)
	}
}

func TestErrorsAcrossPackages(t *testing.T) {
	_, err := router.New(router.Config{})
	if !framework.IsInvalidConfig(err) {
		t.Errorf("IsInvalidConfig(%v) = false for a router error", err)
	}
	_, err = crud.New(crud.Config{})
	if !framework.IsInvalidConfig(err) {
		t.Errorf("IsInvalidConfig(%v) = false for a crud error", err)
	}
	r, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{mustSet(t)}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ResourceSet("obj")
	if !framework.IsNoResourceSet(err) {
		t.Errorf("IsNoResourceSet(%v) = false for a router error", err)
	}
	if framework.IsExecutionFailed(err) || framework.IsNoResourceSet(errBoom) {
		t.Error("helpers match unrelated errors")
	}
}

func mustSet(t *testing.T) *router.ResourceSet {
	s, err := router.NewResourceSet(router.ResourceSetConfig{
		Handles:   func(any) bool { return false },
		Resources: chain(&recorder{}, nil),
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// configMapOps manages the data of an in-memory "ConfigMap" for each object.
type configMapOps struct {
	store map[string]string // name -> data
}

func (o *configMapOps) Name() string { return "configmap" }

func (o *configMapOps) GetCurrentState(_ context.Context, obj any) (any, error) {
	data, ok := o.store[obj.(string)]
	if !ok {
		return nil, nil
	}
	return data, nil
}

func (o *configMapOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	return "greeting for " + obj.(string), nil
}

func (o *configMapOps) NewUpdatePatch(_ context.Context, _, current, desired any) (*crud.Patch, error) {
	p := crud.NewPatch()
	switch {
	case current == nil:
		p.SetCreateChange(desired)
	case current != desired:
		p.SetUpdateChange(desired)
	}
	return p, nil
}

func (o *configMapOps) NewDeletePatch(_ context.Context, _, current, _ any) (*crud.Patch, error) {
	p := crud.NewPatch()
	p.SetDeleteChange(current)
	return p, nil
}

func (o *configMapOps) ApplyCreateChange(_ context.Context, obj, change any) error {
	fmt.Println("create:", change)
	o.store[obj.(string)] = change.(string)
	return nil
}

func (o *configMapOps) ApplyUpdateChange(_ context.Context, obj, change any) error {
	fmt.Println("update:", change)
	o.store[obj.(string)] = change.(string)
	return nil
}

func (o *configMapOps) ApplyDeleteChange(_ context.Context, obj, change any) error {
	fmt.Println("delete:", change)
	delete(o.store, obj.(string))
	return nil
}

// ExampleProcessUpdate builds a crud resource from an Ops and reconciles an
// object with ProcessUpdate and ProcessDelete.
func ExampleProcessUpdate() {
	r, err := crud.New(crud.Config{Ops: &configMapOps{store: map[string]string{}}})
	if err != nil {
		panic(err)
	}
	resources := []resource.Interface{r}
	ctx := context.Background()

	// The first run creates, the second finds nothing to do.
	for range 2 {
		if err := framework.ProcessUpdate(ctx, "alice", resources); err != nil {
			panic(err)
		}
	}
	if err := framework.ProcessDelete(ctx, "alice", resources); err != nil {
		panic(err)
	}
	// Output:
	// create: greeting for alice
	// delete: greeting for alice
}

// nameBomb is a resource whose Name panics once armed (after the router
// asked it at construction).
type nameBomb struct {
	fake
	armed bool
}

func (b *nameBomb) Name() string {
	if b.armed {
		panic("name: nil config")
	}
	return b.fake.Name()
}

// TestProcessRecoversAPanicInName: a resource whose Name panics is a
// panicking resource, as one whose operation panics: ProcessUpdate and
// ProcessDelete return it as an *ExecutionError wrapping a *PanicError
// (the resource named by its position and type), recorded in the trace,
// and run no later resource. The panic went past their recover, which
// asks for the name outside it, and out of the caller.
func TestProcessRecoversAPanicInName(t *testing.T) {
	for _, p := range processes {
		t.Run(p.name, func(t *testing.T) {
			rec := &recorder{}
			rs := chain(rec, nil)
			rs[1] = &nameBomb{fake: fake{name: "b", rec: rec}, armed: true}
			tr := &trace.Trace{}
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("%s() panicked: %v", p.name, v)
					}
				}()
				err = p.fn(trace.NewContext(context.Background(), tr), nil, rs)
			}()
			const name = "resources[1] (*framework_test.nameBomb)"
			var ee *framework.ExecutionError
			var pe *framework.PanicError
			if !errors.As(err, &ee) || ee.Resource != name || !errors.As(err, &pe) || pe.Resource != name || fmt.Sprint(pe.Value) != "name: nil config" {
				t.Fatalf("%s() = %v, want the panic of Name as an *ExecutionError of %s", p.name, err, name)
			}
			if calls := rec.Calls(); !slices.Equal(calls, []string{"a " + p.op}) {
				t.Errorf("calls = %v, want a's only", calls)
			}
			steps := tr.Snapshot().Steps
			if last := steps[len(steps)-1]; last.Resource != name || last.Outcome != trace.OutcomeError {
				t.Errorf("last trace step = %+v, want %s's error", last, name)
			}
		})
	}
}

// TestPlanRecoversAPanicInName: Plan returns a panic in a resource's Name
// as the resource's error, as it returns a panic in its plan; it went out
// of Plan and crashed the plan command.
func TestPlanRecoversAPanicInName(t *testing.T) {
	r := &nameBomb{fake: fake{name: "b", rec: &recorder{}}, armed: true}
	var err error
	func() {
		defer func() {
			if v := recover(); v != nil {
				t.Fatalf("Plan() panicked: %v", v)
			}
		}()
		_, err = framework.Plan(context.Background(), nil, []resource.Interface{r})
	}()
	if !errors.Is(err, framework.ErrPanic) || !strings.Contains(err.Error(), "resources[0] (*framework_test.nameBomb)") {
		t.Fatalf("Plan() = %v, want the panic of Name naming resources[0]", err)
	}
}
