package crud_test

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/trace"
)

var errBoom = errors.New("boom")

// read are the steps before the apply steps.
var (
	readCreate = []string{crud.StepGetCurrentState, crud.StepGetDesiredState, crud.StepNewUpdatePatch}
	readDelete = []string{crud.StepGetCurrentState, crud.StepGetDesiredState, crud.StepNewDeletePatch}
)

func newResource(t *testing.T, ops crud.Ops) *crud.Resource {
	t.Helper()
	r, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func patch(create, update, del any) *crud.Patch {
	p := crud.NewPatch()
	p.SetCreateChange(create)
	p.SetUpdateChange(update)
	p.SetDeleteChange(del)
	return p
}

// nilLogger is a logger whose nil pointer panics at its first line.
type nilLogger struct{ lines int }

func (l *nilLogger) Log(...any) error { l.lines++; return nil }

func TestNew(t *testing.T) {
	tests := []struct {
		name      string
		config    crud.Config
		wantField string
	}{
		{name: "missing ops", config: crud.Config{}, wantField: "Ops"},
		{name: "nil pointer ops", config: crud.Config{Ops: (*crudtest.Ops)(nil)}, wantField: "Ops"},
		{name: "empty name", config: crud.Config{Ops: &crudtest.Ops{}}, wantField: "Ops.Name()"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := crud.New(tt.config)
			if !errors.Is(err, crud.ErrInvalidConfig) {
				t.Fatalf("New() error = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), "crud.Config."+tt.wantField+" must not be empty") {
				t.Fatalf("New() error = %q does not name %s", err, tt.wantField)
			}
		})
	}
	// A Logger holding a nil pointer would panic at its first line.
	if _, err := crud.New(crud.Config{Ops: &crudtest.Ops{Resource: "configmap"}, Logger: (*nilLogger)(nil)}); !errors.Is(err, crud.ErrInvalidConfig) || !strings.Contains(err.Error(), "crud.Config.Logger is a nil *crud_test.nilLogger") {
		t.Fatalf("New() with a nil pointer Logger = %v, want ErrInvalidConfig naming Logger", err)
	}

	ops := &crudtest.Ops{Resource: "configmap"}
	r := newResource(t, ops)
	if r.Name() != "configmap" || r.Ops() != crud.Ops(ops) {
		t.Fatalf("Name() = %q, Ops() = %v", r.Name(), r.Ops())
	}
}

func TestPatchParts(t *testing.T) {
	var nilPointer *struct{}
	var nilSlice []string
	tests := []struct {
		name  string
		patch *crud.Patch
		want  []crudtest.Call // apply calls only
	}{
		{name: "nil patch", patch: nil},
		{name: "empty patch", patch: crud.NewPatch()},
		{name: "all parts in order", patch: patch("c", "u", "d"), want: []crudtest.Call{
			{Step: crud.StepApplyCreateChange, Change: "c"},
			{Step: crud.StepApplyUpdateChange, Change: "u"},
			{Step: crud.StepApplyDeleteChange, Change: "d"},
		}},
		{name: "update only", patch: patch(nil, "u", nil), want: []crudtest.Call{{Step: crud.StepApplyUpdateChange, Change: "u"}}},
		{name: "create and delete", patch: patch("c", nil, "d"), want: []crudtest.Call{
			{Step: crud.StepApplyCreateChange, Change: "c"},
			{Step: crud.StepApplyDeleteChange, Change: "d"},
		}},
		{name: "typed nils are not set", patch: patch(nilPointer, nilSlice, map[string]int(nil))},
		{name: "empty non-nil slice is set", patch: patch([]string{}, nil, nil), want: []crudtest.Call{{Step: crud.StepApplyCreateChange, Change: []string{}}}},
		{name: "zero value is set", patch: patch(0, "", false), want: []crudtest.Call{
			{Step: crud.StepApplyCreateChange, Change: 0},
			{Step: crud.StepApplyUpdateChange, Change: ""},
			{Step: crud.StepApplyDeleteChange, Change: false},
		}},
	}
	for _, tt := range tests {
		for _, deleting := range []bool{false, true} {
			name := tt.name + map[bool]string{false: "/ensure created", true: "/ensure deleted"}[deleting]
			t.Run(name, func(t *testing.T) {
				ops := &crudtest.Ops{Resource: "r", Patch: tt.patch}
				r := newResource(t, ops)
				ensure, read := r.EnsureCreated, readCreate
				if deleting {
					ensure, read = r.EnsureDeleted, readDelete
				}
				if err := ensure(context.Background(), nil); err != nil {
					t.Fatal(err)
				}
				calls := ops.Calls()
				if got := ops.Steps()[:3]; !slices.Equal(got, read) {
					t.Fatalf("read steps = %v, want %v", got, read)
				}
				if got := calls[3:]; !equalCalls(got, tt.want) {
					t.Fatalf("apply calls = %v, want %v", got, tt.want)
				}
			})
		}
	}
}

func equalCalls(a, b []crudtest.Call) bool {
	return slices.EqualFunc(a, b, func(x, y crudtest.Call) bool { return reflect.DeepEqual(x, y) })
}

func TestPatchSetterReplaces(t *testing.T) {
	p := crud.NewPatch()
	p.SetCreateChange("a")
	p.SetCreateChange(nil)
	if _, ok := p.CreateChange(); ok {
		t.Fatal("SetCreateChange(nil) did not unset the part")
	}
	p.SetUpdateChange("a")
	p.SetUpdateChange("b")
	if v, ok := p.UpdateChange(); !ok || v != "b" {
		t.Fatalf("UpdateChange() = %v, %v, want b, true", v, ok)
	}
}

func TestStepErrors(t *testing.T) {
	all := patch("c", "u", "d")
	tests := []struct {
		step     string
		deleting bool
		wantRun  []string // steps run, the failing one last
	}{
		{step: crud.StepGetCurrentState, wantRun: readCreate[:1]},
		{step: crud.StepGetDesiredState, wantRun: readCreate[:2]},
		{step: crud.StepNewUpdatePatch, wantRun: readCreate},
		{step: crud.StepNewDeletePatch, deleting: true, wantRun: readDelete},
		{step: crud.StepApplyCreateChange, wantRun: append(slices.Clone(readCreate), crud.StepApplyCreateChange)},
		{step: crud.StepApplyUpdateChange, wantRun: append(slices.Clone(readCreate), crud.StepApplyCreateChange, crud.StepApplyUpdateChange)},
		{step: crud.StepApplyDeleteChange, deleting: true, wantRun: append(slices.Clone(readDelete), crud.StepApplyCreateChange, crud.StepApplyUpdateChange, crud.StepApplyDeleteChange)},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			ops := &crudtest.Ops{Resource: "configmap", Patch: all, Errors: map[string][]error{tt.step: {errBoom}}}
			r := newResource(t, ops)
			ensure := r.EnsureCreated
			if tt.deleting {
				ensure = r.EnsureDeleted
			}
			err := ensure(context.Background(), nil)
			if !errors.Is(err, errBoom) {
				t.Fatalf("error = %v, want it to wrap %v", err, errBoom)
			}
			if want := "configmap: " + tt.step + ": boom"; err.Error() != want {
				t.Fatalf("error = %q, want %q", err, want)
			}
			if got := ops.Steps(); !slices.Equal(got, tt.wantRun) {
				t.Fatalf("steps = %v, want %v", got, tt.wantRun)
			}
		})
	}
}

func TestPlan(t *testing.T) {
	tests := []struct {
		deleting bool
		want     []string
	}{
		{deleting: false, want: readCreate},
		{deleting: true, want: readDelete},
	}
	for _, tt := range tests {
		t.Run(map[bool]string{false: "update", true: "delete"}[tt.deleting], func(t *testing.T) {
			want := patch("c", "u", "d")
			ops := &crudtest.Ops{Resource: "r", Patch: want}
			got, err := newResource(t, ops).Plan(context.Background(), nil, tt.deleting)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Fatalf("Plan() patch = %v, want %v", got, want)
			}
			if steps := ops.Steps(); !slices.Equal(steps, tt.want) {
				t.Fatalf("steps = %v, want %v (nothing applied)", steps, tt.want)
			}
		})
	}

	t.Run("error", func(t *testing.T) {
		ops := &crudtest.Ops{Resource: "r", Errors: map[string][]error{crud.StepGetDesiredState: {errBoom}}}
		if _, err := newResource(t, ops).Plan(context.Background(), nil, false); !errors.Is(err, errBoom) {
			t.Fatalf("Plan() error = %v, want %v", err, errBoom)
		}
	})
}

func TestCancel(t *testing.T) {
	signals := []struct {
		name      string
		newCtx    func(context.Context) context.Context
		setCancel func(context.Context)
	}{
		{"resource canceled", resourcecanceledcontext.NewContext, resourcecanceledcontext.SetCanceled},
		{"reconciliation canceled", reconciliationcanceledcontext.NewContext, reconciliationcanceledcontext.SetCanceled},
	}
	all := append(slices.Clone(readCreate), crud.StepApplyCreateChange, crud.StepApplyUpdateChange, crud.StepApplyDeleteChange)
	for _, sig := range signals {
		for i, step := range all {
			t.Run(sig.name+"/in "+step, func(t *testing.T) {
				ops := &crudtest.Ops{
					Resource: "r",
					Patch:    patch("c", "u", "d"),
					Hooks:    map[string]func(context.Context){step: sig.setCancel},
				}
				tr := &trace.Trace{}
				ctx := trace.NewContext(sig.newCtx(context.Background()), tr)
				if err := newResource(t, ops).EnsureCreated(ctx, nil); err != nil {
					t.Fatalf("EnsureCreated() = %v, want nil", err)
				}
				if got := ops.Steps(); !slices.Equal(got, all[:i+1]) {
					t.Fatalf("steps = %v, want %v", got, all[:i+1])
				}
				steps := tr.Snapshot().Steps
				last := steps[len(steps)-1]
				if i+1 < len(all) && (last.Step != all[i+1] || last.Outcome != trace.OutcomeCanceled) {
					t.Fatalf("last trace step = %+v, want %q canceled", last, all[i+1])
				}
			})
		}
	}

	t.Run("canceled before the first step", func(t *testing.T) {
		ctx := resourcecanceledcontext.NewContext(context.Background())
		resourcecanceledcontext.SetCanceled(ctx)
		ops := &crudtest.Ops{Resource: "r"}
		if err := newResource(t, ops).EnsureDeleted(ctx, nil); err != nil || len(ops.Calls()) != 0 {
			t.Fatalf("EnsureDeleted() = %v with calls %v, want nil and no calls", err, ops.Steps())
		}
		if p, err := newResource(t, ops).Plan(ctx, nil, false); p != nil || err != nil {
			t.Fatalf("Plan() = %v, %v, want nil, nil", p, err)
		}
	})
}

// TestPlanCanceledByItsPatchStep: a patch step that sets a cancel signal
// (the resource's or the reconciliation's) makes Plan return no patch, as
// EnsureCreated and EnsureDeleted then apply none of it; Plan returned the
// patch, which its callers took for changes that would be applied.
func TestPlanCanceledByItsPatchStep(t *testing.T) {
	signals := []struct {
		name      string
		newCtx    func(context.Context) context.Context
		setCancel func(context.Context)
	}{
		{"resource canceled", resourcecanceledcontext.NewContext, resourcecanceledcontext.SetCanceled},
		{"reconciliation canceled", reconciliationcanceledcontext.NewContext, reconciliationcanceledcontext.SetCanceled},
	}
	for _, sig := range signals {
		for _, deleting := range []bool{false, true} {
			step := map[bool]string{false: crud.StepNewUpdatePatch, true: crud.StepNewDeletePatch}[deleting]
			t.Run(sig.name+"/in "+step, func(t *testing.T) {
				newOps := func() *crudtest.Ops {
					return &crudtest.Ops{Resource: "r", Patch: patch("c", "u", "d"), Hooks: map[string]func(context.Context){step: sig.setCancel}}
				}
				ops := newOps()
				p, err := newResource(t, ops).Plan(sig.newCtx(context.Background()), nil, deleting)
				if p != nil || err != nil {
					t.Errorf("Plan() = %v, %v; want nil, nil: the patch would not be applied", p, err)
				}
				// What a reconciliation does: it stops before applying.
				ensure := map[bool]func(*crud.Resource, context.Context) error{
					false: func(r *crud.Resource, ctx context.Context) error { return r.EnsureCreated(ctx, nil) },
					true:  func(r *crud.Resource, ctx context.Context) error { return r.EnsureDeleted(ctx, nil) },
				}[deleting]
				ops = newOps()
				if err := ensure(newResource(t, ops), sig.newCtx(context.Background())); err != nil || ops.Steps()[len(ops.Steps())-1] != step {
					t.Errorf("ensure = %v after steps %v; want nil and nothing applied", err, ops.Steps())
				}
			})
		}
	}
}

func TestTrace(t *testing.T) {
	ops := &crudtest.Ops{Resource: "r", Patch: patch(nil, "u", nil), Errors: map[string][]error{crud.StepApplyUpdateChange: {errBoom}}}
	tr := &trace.Trace{}
	ctx := trace.NewContext(context.Background(), tr)
	_ = newResource(t, ops).EnsureCreated(ctx, nil)
	type step struct {
		name    string
		outcome trace.Outcome
	}
	want := []step{
		{crud.StepGetCurrentState, trace.OutcomeDone},
		{crud.StepGetDesiredState, trace.OutcomeDone},
		{crud.StepNewUpdatePatch, trace.OutcomeDone},
		{crud.StepApplyCreateChange, trace.OutcomeSkipped},
		{crud.StepApplyUpdateChange, trace.OutcomeError},
	}
	var got []step
	steps := tr.Snapshot().Steps
	for i, s := range steps {
		if s.Resource != "r" {
			t.Errorf("step %+v has the wrong resource", s)
		}
		got = append(got, step{s.Step, s.Outcome})
		// One clock read per step: each starts where the one before ended.
		if i > 0 {
			if prev := steps[i-1]; !s.Start.Equal(prev.Start.Add(prev.Duration)) {
				t.Errorf("step %s starts at %v, not where %s ended (%v)", s.Step, s.Start, prev.Step, prev.Start.Add(prev.Duration))
			}
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("trace = %v, want %v", got, want)
	}
}

func TestWrapOps(t *testing.T) {
	inner := &crudtest.Ops{Resource: "r"}
	r := newResource(t, inner)
	var wrapped crud.Ops
	w, ok := r.WrapOps(func(o crud.Ops) crud.Ops {
		wrapped = &renamed{Ops: o}
		return wrapped
	})
	if !ok {
		t.Fatal("WrapOps() ok = false")
	}
	if r.Ops() != crud.Ops(inner) {
		t.Fatal("WrapOps changed the receiver")
	}
	if w.(*crud.Resource).Ops() != wrapped || w.Name() != "r" {
		t.Fatalf("wrapped resource runs %v named %q", w.(*crud.Resource).Ops(), w.Name())
	}
	if err := w.EnsureCreated(context.Background(), nil); err != nil || inner.Count(crud.StepGetCurrentState) != 1 {
		t.Fatalf("wrapped resource did not run the inner ops: %v", err)
	}
}

type renamed struct{ crud.Ops }

var _ resource.Interface = (*crud.Resource)(nil)

// statesOps passes its states to the patch as its test says, recording
// what NewUpdatePatch received.
type statesOps struct {
	crudtest.Ops
	current, desired any
	got              []any
}

func (o *statesOps) GetCurrentState(context.Context, any) (any, error) { return o.current, nil }
func (o *statesOps) GetDesiredState(context.Context, any) (any, error) { return o.desired, nil }
func (o *statesOps) NewUpdatePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	o.got = []any{current, desired}
	p := crud.NewPatch()
	p.SetCreateChange(desired) // a nil pointer leaves it unset
	return p, nil
}

// TestTypedNilStates pins Ops.GetCurrentState's documentation: a typed nil
// state reaches NewUpdatePatch as returned (not turned into nil), and a
// create part set to it is unset, so nothing is applied.
func TestTypedNilStates(t *testing.T) {
	var none *struct{ Data string }
	ops := &statesOps{Ops: crudtest.Ops{Resource: "r"}, current: none, desired: none}
	if err := newResource(t, ops).EnsureCreated(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(ops.got) != 2 || ops.got[0] == nil || ops.got[1] == nil || ops.got[1] != any(none) {
		t.Fatalf("NewUpdatePatch got states %#v, want the typed nils as returned", ops.got)
	}
	if n := ops.Count(crud.StepApplyCreateChange); n != 0 {
		t.Fatalf("create applied %d times for a typed-nil desired state, want 0", n)
	}
}
