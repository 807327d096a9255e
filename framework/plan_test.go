package framework

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/context/updateallowedcontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

type described struct{}

func (described) Describe() []string { return []string{"replicas: 2 -> 3"} }

type stringer struct{}

func (stringer) String() string { return "image: a -> b" }

func TestFormatPlans(t *testing.T) {
	var b strings.Builder
	FormatPlans(&b, []ResourcePlan{
		{Resource: "deployment", Update: described{}},
		{Resource: "configmap", Create: map[string]string{"k": "v"}},
		{Resource: "service", Delete: stringer{}},
		{Resource: "status"},
		{Resource: "custom", Unsupported: true},
	})
	want := `resource deployment
  ~ update
      replicas: 2 -> 3
resource configmap
  + create
      {
        "k": "v"
      }
resource service
  - delete
      image: a -> b
resource status
  = no changes
resource custom
  ? not a crud resource: cannot plan
`
	if got := b.String(); got != want {
		t.Fatalf("FormatPlans() =\n%s\nwant\n%s", got, want)
	}
}

// planOps is a crud.Ops whose update patch updates to want, or fails with
// err, and whose apply steps must never run in a plan.
type planOps struct {
	name string
	want any
	err  error
}

func (o planOps) Name() string                                      { return o.name }
func (o planOps) GetCurrentState(context.Context, any) (any, error) { return nil, nil }
func (o planOps) GetDesiredState(context.Context, any) (any, error) { return o.want, o.err }
func (o planOps) NewUpdatePatch(_ context.Context, _, _, desired any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if desired != nil {
		p.SetUpdateChange(desired)
	}
	return p, nil
}
func (o planOps) NewDeletePatch(context.Context, any, any, any) (*crud.Patch, error) {
	p := crud.NewPatch()
	p.SetDeleteChange(described{})
	return p, nil
}
func (o planOps) ApplyCreateChange(context.Context, any, any) error { panic("applied in a plan") }
func (o planOps) ApplyUpdateChange(context.Context, any, any) error { panic("applied in a plan") }
func (o planOps) ApplyDeleteChange(context.Context, any, any) error { panic("applied in a plan") }

func TestFrameworkPlan(t *testing.T) {
	resources := func(t *testing.T, ops ...crud.Ops) []resource.Interface {
		var rs []resource.Interface
		for _, o := range ops {
			r, err := crud.New(crud.Config{Ops: o})
			if err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	v1, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: router.LabelIs("v", "1", true),
		Resources: resources(t, planOps{name: "a", want: described{}}, planOps{name: "b"})})
	if err != nil {
		t.Fatal(err)
	}
	invalid := errors.New("spec.image is not valid")
	v2, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v2", Handles: router.LabelIs("v", "2", false),
		Resources: resources(t, planOps{name: "a", want: described{}}, planOps{name: "b", err: invalid}, planOps{name: "c"})})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{v1, v2}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	p, err := f.Plan(ctx, object("web", 1, nil), "")
	if err != nil || p.Object != "ns/web" || p.ResourceSet != "v1" || len(p.Resources) != 2 || !p.Changes() || p.Deleting {
		t.Fatalf("Plan(routed to v1) = %+v, %v", p, err)
	}
	var b strings.Builder
	p.Format(&b)
	want := "ns/web (resource set v1)\n  resource a\n    ~ update\n        replicas: 2 -> 3\n  resource b\n    = no changes\n"
	if b.String() != want {
		t.Fatalf("Format() =\n%s\nwant\n%s", b.String(), want)
	}

	p, err = f.Plan(ctx, object("web", 1, nil), "v2")
	if !errors.Is(err, invalid) || !errors.Is(p.Err, invalid) || p.ResourceSet != "v2" || len(p.Resources) != 1 {
		t.Fatalf("Plan(under v2) = %+v, %v; want the plan of a and the error of b", p, err)
	}
	b.Reset()
	p.Format(&b)
	if lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); !strings.HasPrefix(lines[len(lines)-1], "  stops: ") || !strings.Contains(lines[len(lines)-1], "spec.image is not valid") {
		t.Fatalf("Format() of a stopped plan =\n%s", b.String())
	}

	if p, err := f.Plan(ctx, object("web", 1, map[string]string{"v": "3"}), ""); !errors.Is(err, ErrNoResourceSet) || !errors.Is(p.Err, ErrNoResourceSet) || p.Object != "ns/web" {
		t.Fatalf("Plan(routed nowhere) = %+v, %v; want ErrNoResourceSet", p, err)
	}
	if _, err := f.Plan(ctx, object("web", 1, nil), "v9"); !errors.Is(err, ErrNoResourceSet) {
		t.Fatalf("Plan(under an unknown set) error = %v, want ErrNoResourceSet", err)
	}

	deleted := object("gone", 1, nil)
	deleted.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	deleted.SetFinalizers([]string{f.Finalizer()})
	p, err = f.Plan(ctx, deleted, "")
	if err != nil || !p.Deleting || p.Finalized || len(p.Resources) == 0 || p.Resources[0].Delete == nil {
		t.Fatalf("Plan(deleted) = %+v, %v; want the delete chain", p, err)
	}
	b.Reset()
	p.Format(&b)
	if !strings.HasPrefix(b.String(), "ns/gone (resource set v1), being deleted\n") {
		t.Fatalf("Format() of a delete plan =\n%s", b.String())
	}
	if f.Informer() == nil {
		t.Fatal("Informer() = nil")
	}
}

// TestFrameworkPlanOfAFinalizedDeletion: an object being deleted whose
// finalizer is gone is skipped by a reconciliation (its delete chain ran
// already), so its plan says so and plans no delete chain; with
// DisableFinalizers the delete chain runs, and is planned.
func TestFrameworkPlanOfAFinalizedDeletion(t *testing.T) {
	r, err := crud.New(crud.Config{Ops: planOps{name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: router.LabelIs("v", "1", true), Resources: []resource.Interface{r}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	deleted := object("gone", 1, nil)
	deleted.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
	deleted.SetFinalizers([]string{"example.com/someone-else"})
	ctx := context.Background()

	f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Plan(ctx, deleted, "")
	if err != nil || !p.Deleting || !p.Finalized || len(p.Resources) != 0 || p.Changes() || p.ResourceSet != "v1" {
		t.Fatalf("Plan(deleted without our finalizer) = %+v, %v; want Finalized and no resources planned", p, err)
	}
	var b strings.Builder
	p.Format(&b)
	want := "ns/gone (resource set v1), being deleted\n  = skipped: the operator's finalizer is gone (its delete chain ran already, or the object was never reconciled)\n"
	if b.String() != want {
		t.Fatalf("Format() =\n%s\nwant\n%s", b.String(), want)
	}

	f, err = New(Config{Name: "plan2", Informer: informertest.New(), ResourceRouter: rt, DryRun: true, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err = f.Plan(ctx, deleted, "")
	if err != nil || p.Finalized || len(p.Resources) != 1 || p.Resources[0].Delete == nil {
		t.Fatalf("Plan(deleted, DisableFinalizers) = %+v, %v; want the delete chain", p, err)
	}
}

// signalOps is a crud.Ops whose update patch sets the signals signal sets
// and changes "changed"; its apply steps must never run in a plan.
type signalOps struct {
	planOps
	signal  func(ctx context.Context)
	planned *[]string
}

func (o signalOps) NewUpdatePatch(ctx context.Context, _, _, _ any) (*crud.Patch, error) {
	*o.planned = append(*o.planned, o.name)
	if o.signal != nil {
		o.signal(ctx)
	}
	p := crud.NewPatch()
	p.SetUpdateChange("changed")
	return p, nil
}

func TestPlanStopsWhereAReconciliationWaits(t *testing.T) {
	var planned []string
	var rs []resource.Interface
	for _, o := range []signalOps{
		{planOps: planOps{name: "first"}},
		{planOps: planOps{name: "skips"}, signal: resourcecanceledcontext.SetCanceled},
		{planOps: planOps{name: "waits"}, signal: func(ctx context.Context) {
			conditioncontext.Set(ctx, conditioncontext.Reconciling, metav1.ConditionTrue, "WaitingForChild", "deployment ns/web not ready: 1 of 2 replicas available")
			requeuecontext.SetRequeueAfter(ctx, 5*time.Second)
			reconciliationcanceledcontext.SetCanceled(ctx)
		}},
		{planOps: planOps{name: "last"}},
	} {
		o.planned = &planned
		r, err := crud.New(crud.Config{Ops: o})
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	plans, err := Plan(context.Background(), object("web", 1, nil), rs)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"first", "skips", "waits"}; !slices.Equal(planned, want) {
		t.Fatalf("planned %v, want %v: a plan stops where a reconciliation would", planned, want)
	}
	if len(plans) != 3 || !plans[0].Changes() || plans[0].Waits != "" || plans[0].Skipped ||
		!plans[1].Skipped || plans[1].Changes() ||
		plans[2].Changes() || plans[2].Waits != "deployment ns/web not ready: 1 of 2 replicas available (again in 5s)" {
		t.Fatalf("Plan() = %+v", plans)
	}
	var b strings.Builder
	FormatPlans(&b, plans)
	want := `resource first
  ~ update
      "changed"
resource skips
  - skipped: the resource canceled itself
resource waits
  … waits: deployment ns/web not ready: 1 of 2 replicas available (again in 5s)
`
	if b.String() != want {
		t.Fatalf("FormatPlans() =\n%s\nwant\n%s", b.String(), want)
	}
	op := ObjectPlan{Object: "ns/web", Resources: plans}
	if r, what, ok := op.Waits(); !ok || r != "waits" || !strings.HasPrefix(what, "deployment ns/web not ready") {
		t.Fatalf("ObjectPlan.Waits() = %q, %q, %v", r, what, ok)
	}
	if _, _, ok := (ObjectPlan{Resources: plans[:2]}).Waits(); ok {
		t.Fatal("ObjectPlan.Waits() of a plan nothing waits in: ok")
	}

	// A cancel without a Reconciling condition or a requeue still says so.
	planned = nil
	r, err := crud.New(crud.Config{Ops: signalOps{planOps: planOps{name: "cancels"}, planned: &planned, signal: reconciliationcanceledcontext.SetCanceled}})
	if err != nil {
		t.Fatal(err)
	}
	if plans, err := Plan(context.Background(), object("web", 1, nil), []resource.Interface{r}); err != nil || len(plans) != 1 || plans[0].Waits != "canceled the reconciliation" {
		t.Fatalf("Plan() = %+v, %v", plans, err)
	}
}

type initKey struct{}

// needsInit plans only with the value its resource set's InitCtx puts in
// the context.
type needsInit struct{ planOps }

func (o needsInit) GetDesiredState(ctx context.Context, _ any) (any, error) {
	if ctx.Value(initKey{}) == nil {
		return nil, errors.New("InitCtx did not run")
	}
	return described{}, nil
}

type panicking struct{ planOps }

func (panicking) GetDesiredState(context.Context, any) (any, error) { panic("nil spec field") }

// TestPlanAsAReconciliation: Framework.Plan runs the set's InitCtx as a
// reconciliation does (it did not, so resources that read its values could
// not be planned), and a resource's panic is its error, not a crash of
// the plan command; a nil resource is an error.
func TestPlanAsAReconciliation(t *testing.T) {
	r, err := crud.New(crud.Config{Ops: needsInit{planOps{name: "a"}}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true },
		InitCtx: func(ctx context.Context, _ any) (context.Context, error) {
			return context.WithValue(ctx, initKey{}, true), nil
		},
		Resources: []resource.Interface{r}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := f.Plan(context.Background(), object("web", 1, nil), ""); err != nil || !p.Changes() {
		t.Errorf("Plan with the set's InitCtx = %+v, %v; want a change and no error", p, err)
	}

	pr, err := crud.New(crud.Config{Ops: panicking{planOps{name: "p"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Plan(context.Background(), object("web", 1, nil), []resource.Interface{pr})
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Resource != "p" {
		t.Errorf("Plan over a panicking resource = %v, want a *PanicError of resource p", err)
	}
	if _, err := Plan(context.Background(), object("web", 1, nil), []resource.Interface{nil}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("Plan over a nil resource = %v, want ErrInvalidConfig", err)
	}
}

// TestUpdatePredicateObjectReplaced: a relist after a watch gap shows an
// object deleted and created again under the same name as an update from
// one UID to another; with the same generation, labels and annotations it
// was filtered, and the new object waited for the next resync.
func TestUpdatePredicateObjectReplaced(t *testing.T) {
	old := object("web", 1, map[string]string{"a": "b"})
	old.SetUID("uid-1")
	old.SetResourceVersion("10")
	replaced := object("web", 1, map[string]string{"a": "b"})
	replaced.SetUID("uid-2")
	replaced.SetResourceVersion("42")
	if !DefaultUpdatePredicate(old, replaced) {
		t.Error("DefaultUpdatePredicate filtered an object replaced by another of the same name")
	}
}

// secretOps plans the create of a Secret, a change that does not describe
// itself.
type secretOps struct{ planOps }

func (secretOps) GetDesiredState(context.Context, any) (any, error) {
	return &corev1.Secret{StringData: map[string]string{"password": "hunter2-SECRET"}}, nil
}
func (secretOps) NewUpdatePatch(_ context.Context, _, _, desired any) (*crud.Patch, error) {
	p := crud.NewPatch()
	p.SetCreateChange(desired)
	return p, nil
}

// TestDebugPlanHidesContents: the debug endpoint serves an object's last
// dry-run plan without the contents of its changes (a Secret's data, in
// JSON and in text), naming a change that does not describe itself by its
// type; it served them whole.
func TestDebugPlanHidesContents(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r, err := crud.New(crud.Config{Ops: secretOps{planOps{name: "secret"}}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Name: "op", Informer: informertest.New(object("web", 1, nil)), ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the dry-run plan", func() bool { return f.Plans("ns/web") != nil })
	srv := httptest.NewServer(f.DebugHandler())
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	for _, query := range []string{"", "?format=text"} {
		resp, err := srv.Client().Get(srv.URL + DebugPath + "/ns/web" + query)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if body := string(b); strings.Contains(body, "hunter2") || !strings.Contains(body, "*v1.Secret") {
			t.Errorf("debug plan%s =\n%s\nwant the change named by its type, its contents not shown", query, body)
		}
	}
	// The plan itself, for the plan command, is whole.
	if p := f.Plans("ns/web"); len(p) != 1 || p[0].Create == nil {
		t.Errorf("Plans = %+v, want the create", p)
	}
}

// gateOps is a crud.Ops that updates only when an earlier part of the
// reconciliation allowed updates (updateallowedcontext); its apply steps
// count the updates.
type gateOps struct {
	planOps
	applied *atomic.Int64
}

func (o gateOps) NewUpdatePatch(ctx context.Context, _, _, _ any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if updateallowedcontext.IsUpdateAllowed(ctx) {
		p.SetUpdateChange("allowed")
	}
	return p, nil
}

func (o gateOps) ApplyUpdateChange(context.Context, any, any) error {
	o.applied.Add(1)
	return nil
}

// TestPlanSeesTheSignalsOfInitCtx: a resource set's InitCtx may add
// signals to the context or set the reconciliation's (router's
// ResourceSetConfig.InitCtx), and the resources act on them. A plan runs
// InitCtx "as a reconciliation does" and "stops where a reconciliation
// would", so it must see them too. Plan gave the resources fresh signals
// after InitCtx had run, which hid what InitCtx set: a dry run and
// Framework.Plan showed no change where the reconciliation updated.
func TestPlanSeesTheSignalsOfInitCtx(t *testing.T) {
	for name, initCtx := range map[string]func(ctx context.Context, _ any) (context.Context, error){
		"sets the reconciliation's signal": func(ctx context.Context, _ any) (context.Context, error) {
			updateallowedcontext.SetUpdateAllowed(ctx)
			return ctx, nil
		},
		"adds a signal of its own": func(ctx context.Context, _ any) (context.Context, error) {
			ctx = updateallowedcontext.NewContext(ctx)
			updateallowedcontext.SetUpdateAllowed(ctx)
			return ctx, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			var applied atomic.Int64
			r, err := crud.New(crud.Config{Ops: gateOps{planOps: planOps{name: "gate"}, applied: &applied}})
			if err != nil {
				t.Fatal(err)
			}
			set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true },
				InitCtx: initCtx, Resources: []resource.Interface{r}})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
			if err != nil {
				t.Fatal(err)
			}

			// The reconciliation updates.
			f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: rt, DisableFinalizers: true})
			if err != nil {
				t.Fatal(err)
			}
			boot(t, f)
			pollUntil(t, "the reconciliation's update", func() bool { return applied.Load() > 0 })

			// So does its plan, on demand and in a dry run.
			if p, err := f.Plan(context.Background(), object("a", 1, nil), ""); err != nil || !p.Changes() {
				t.Errorf("Framework.Plan() = %+v, %v; want the update the reconciliation applies", p, err)
			}
			dry, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: rt, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			boot(t, dry)
			pollUntil(t, "the dry run's plan", func() bool { return len(dry.Plans("ns/a")) > 0 })
			if plans := dry.Plans("ns/a"); len(plans) != 1 || !plans[0].Changes() {
				t.Errorf("dry run's plans = %+v, want the update the reconciliation applies", plans)
			}
		})
	}
}

// TestPlanOfAReconciliationCanceledBeforeItsChain: an InitCtx that cancels
// the reconciliation makes it run no resource, so its plan plans none (it
// planned the whole chain, InitCtx's cancel hidden by fresh signals).
func TestPlanOfAReconciliationCanceledBeforeItsChain(t *testing.T) {
	var planned []string
	r, err := crud.New(crud.Config{Ops: signalOps{planOps: planOps{name: "a"}, planned: &planned}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true },
		InitCtx: func(ctx context.Context, _ any) (context.Context, error) {
			reconciliationcanceledcontext.SetCanceled(ctx)
			return ctx, nil
		},
		Resources: []resource.Interface{r}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.Plan(context.Background(), object("web", 1, nil), "")
	if err != nil || len(p.Resources) != 0 || len(planned) != 0 {
		t.Fatalf("Plan() = %+v, %v, planned %v; want no resource planned", p, err, planned)
	}
}

// failingPlanOps is planOps whose desired state fails while fail is set.
type failingPlanOps struct {
	planOps
	fail *atomic.Bool
}

func (o failingPlanOps) GetDesiredState(ctx context.Context, obj any) (any, error) {
	if o.fail.Load() {
		return nil, errors.New("spec.image is not valid")
	}
	return o.planOps.GetDesiredState(ctx, obj)
}

// TestDryRunPlansOfTheLastReconciliation: Plans (and the debug endpoint)
// hold the plans of the last dry-run reconciliation: those before the
// resource whose error stopped it, and none when no resource set handles
// the object; they kept the last successful reconciliation's plan, which
// showed "no changes" for the resource that now fails.
func TestDryRunPlansOfTheLastReconciliation(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var fail atomic.Bool
	a, err := crud.New(crud.Config{Ops: planOps{name: "a", want: described{}}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := crud.New(crud.Config{Ops: failingPlanOps{planOps{name: "b"}, &fail}})
	if err != nil {
		t.Fatal(err)
	}
	handles := func(obj any) bool { return obj.(*unstructured.Unstructured).GetLabels()["gone"] == "" }
	inf := informertest.New(object("web", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, handles, a, b), DryRun: true, BackOffFactory: fastBackOff})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	lastResult := func(result string) func() bool {
		return func() bool {
			tr := f.Traces("ns/web")
			return len(tr) > 0 && tr[len(tr)-1].Result == result
		}
	}
	pollUntil(t, "the dry-run plan", func() bool { return len(f.Plans("ns/web")) == 2 })

	fail.Store(true)
	if err := inf.Update(object("web", 2, nil)); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the failed dry run", lastResult(ResultError))
	if p := f.Plans("ns/web"); len(p) != 1 || p[0].Resource != "a" || p[0].Update == nil {
		t.Fatalf("Plans() after a dry run that b stopped = %+v, want only a's update", p)
	}
	srv := httptest.NewServer(f.DebugHandler())
	defer srv.Close()
	defer srv.Client().CloseIdleConnections()
	resp, err := srv.Client().Get(srv.URL + DebugPath + "/ns/web?format=text")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if _, plan, _ := strings.Cut(string(body), "last dry-run plan:\n"); strings.Contains(plan, "resource b") {
		t.Fatalf("debug page after a dry run that b stopped shows a plan of b:\n%s", body)
	}

	if err := inf.Update(object("web", 3, map[string]string{"gone": "yes"})); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the unrouted dry run", lastResult(ResultNoResourceSet))
	if p := f.Plans("ns/web"); p != nil {
		t.Fatalf("Plans() after a dry run that no set handles = %+v, want nil", p)
	}
}

// TestFrameworkPlanRecoversAPanicInHandles: a panic in a resource set's
// Handles is the plan's error (a *PanicError of the router), as it is a
// reconciliation's; it went through Plan and crashed the plan command.
func TestFrameworkPlanRecoversAPanicInHandles(t *testing.T) {
	rt := testRouter(t, func(any) bool { panic("nil label map") }, &funcResource{name: "r"})
	f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	var p ObjectPlan
	func() {
		defer func() {
			if r := recover(); r != nil {
				t.Fatalf("Plan panicked: %v", r)
			}
		}()
		p, err = f.Plan(context.Background(), object("web", 1, nil), "")
	}()
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Resource != "resource set v1" || !errors.Is(p.Err, ErrPanic) || p.Object != "ns/web" || p.ResourceSet != "" {
		t.Fatalf("Plan() = %+v, %v; want the panic of Handles as a *PanicError of the set", p, err)
	}
}

// TestPanicInHandlesNamesTheSet: the error of a panic in a set's Handles
// names the set, as the error of a panic in its InitCtx does ("resource set
// "v2": handles: panic: ..."), and PanicError.Resource (errors_total's
// resource label) is "resource set v2"; it was "panic: ..." of the
// "router", naming no set among several. An unnamed set is named by its
// position, as in ErrMultipleResourceSets.
func TestPanicInHandlesNamesTheSet(t *testing.T) {
	for _, tt := range []struct {
		name, setName, wantMsg, wantResource string
	}{
		{name: "named", setName: "v2", wantMsg: `resource set "v2": handles: panic: nil label map`, wantResource: "resource set v2"},
		{name: "unnamed", wantMsg: `resource set #1: handles: panic: nil label map`, wantResource: "resource set (unnamed)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v1, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return false }, Resources: []resource.Interface{&funcResource{name: "r"}}})
			if err != nil {
				t.Fatal(err)
			}
			v2, err := router.NewResourceSet(router.ResourceSetConfig{Name: tt.setName, Handles: func(any) bool { panic("nil label map") }, Resources: []resource.Interface{&funcResource{name: "r"}}})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{v1, v2}})
			if err != nil {
				t.Fatal(err)
			}
			f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Plan(context.Background(), object("web", 1, nil), "")
			var pe *PanicError
			if !errors.As(err, &pe) || err.Error() != tt.wantMsg || pe.Resource != tt.wantResource || !strings.Contains(string(pe.Stack), "TestPanicInHandlesNamesTheSet") {
				t.Fatalf("Plan() error = %v (%+v), want %q, a *PanicError of %q with the stack of the panic", err, pe, tt.wantMsg, tt.wantResource)
			}
		})
	}
}

// TestDryRunPlansTheChainARealRunRuns: a dry run (Config.DryRun) plans
// what a reconciliation without DryRun would do. It planned the delete
// chain of an object being deleted without the Framework's finalizer,
// which such a reconciliation skips (as Framework.Plan says, Finalized);
// it plans that of one with the finalizer, and that of a deleted object
// without a deletionTimestamp (deleted at once, no finalizer held it),
// whose delete chain the reconciliation runs.
func TestDryRunPlansTheChainARealRunRuns(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	a, err := crud.New(crud.Config{Ops: planOps{name: "a", want: described{}}})
	if err != nil {
		t.Fatal(err)
	}
	deleting := func(name string, finalizers ...string) *unstructured.Unstructured {
		u := object(name, 1, nil)
		u.SetDeletionTimestamp(&metav1.Time{Time: time.Now()})
		u.SetFinalizers(finalizers)
		return u
	}
	web := object("web", 1, nil)
	inf := informertest.New(web)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, a), DryRun: true, BackOffFactory: fastBackOff})
	if err != nil {
		t.Fatal(err)
	}
	// lastResult returns the result of key's last reconciliation, "" before its first.
	lastResult := func(key string) string {
		tr := f.Traces(key)
		if len(tr) == 0 {
			return ""
		}
		return tr[len(tr)-1].Result
	}
	deleteOnly := func(p []ResourcePlan) bool {
		return len(p) == 1 && p[0].Delete != nil && p[0].Create == nil && p[0].Update == nil
	}
	boot(t, f)
	pollUntil(t, "the dry-run plan of ns/web", func() bool { p := f.Plans("ns/web"); return len(p) == 1 && p[0].Update != nil })

	if err := inf.Add(deleting("theirs", "example.com/someone-else")); err != nil {
		t.Fatal(err)
	}
	if err := inf.Add(deleting("ours", "example.com/someone-else", f.Finalizer())); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the dry runs of ns/theirs and ns/ours", func() bool { return lastResult("ns/theirs") != "" && lastResult("ns/ours") != "" })
	if r, p := lastResult("ns/theirs"), f.Plans("ns/theirs"); r != ResultSkipped || p != nil {
		t.Errorf("dry run of an object being deleted without our finalizer: result %q, plans %+v; want %q and no plan, as a reconciliation skips it", r, p, ResultSkipped)
	}
	if r, p := lastResult("ns/ours"), f.Plans("ns/ours"); r != ResultDryRun || !deleteOnly(p) {
		t.Errorf("dry run of an object being deleted with our finalizer: result %q, plans %+v; want %q and the delete chain", r, p, ResultDryRun)
	}

	// Deleted at once: the delete event's object has no deletionTimestamp.
	if err := inf.Delete(web); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the dry run of the deleted ns/web", func() bool { return len(f.Traces("ns/web")) >= 2 })
	if r, p := lastResult("ns/web"), f.Plans("ns/web"); r != ResultDryRun || !deleteOnly(p) {
		t.Errorf("dry run of a deleted object: result %q, plans %+v; want %q and the delete chain", r, p, ResultDryRun)
	}
}

// guardedOps creates its database only while the object's DatabaseReady
// condition is not True, as a resource that guards a change outside
// Kubernetes decides (conditioncontext's doc); it cancels the
// reconciliation when the object has the label "wait".
type guardedOps struct{ planOps }

func (o guardedOps) NewUpdatePatch(ctx context.Context, obj, _, _ any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if obj.(*unstructured.Unstructured).GetLabels()["wait"] != "" {
		reconciliationcanceledcontext.SetCanceled(ctx)
		return p, nil
	}
	if c, ok := conditioncontext.Get(ctx, "DatabaseReady"); !ok || c.Status != metav1.ConditionTrue {
		p.SetCreateChange(described{})
	}
	return p, nil
}

// TestPlanReadsTheObjectsConditions: under a Framework with
// Config.Conditions a reconciliation's conditioncontext.Get finds the
// object's conditions, so the plan of a resource that decides from them
// (its Guard's condition) must too: the plan of an object whose database
// exists (DatabaseReady True) showed a create that no reconciliation makes.
// A condition the object has is not one the plan set: a resource that
// cancels the reconciliation without a Reconciling condition waits for
// nothing the object's old Reconciling says.
func TestPlanReadsTheObjectsConditions(t *testing.T) {
	r, err := crud.New(crud.Config{Ops: guardedOps{planOps{name: "database"}}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.Single("v1", r)
	if err != nil {
		t.Fatal(err)
	}
	withStatus := func(labels map[string]string, conds ...any) *unstructured.Unstructured {
		u := object("db", 1, labels)
		if err := unstructured.SetNestedSlice(u.Object, conds, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	ready := map[string]any{"type": "DatabaseReady", "status": "True", "reason": "Created", "message": "db-1", "lastTransitionTime": "2026-01-01T00:00:00Z"}
	waiting := map[string]any{"type": "Reconciling", "status": "True", "reason": "Old", "message": "an old wait", "lastTransitionTime": "2026-01-01T00:00:00Z"}
	for _, dryRun := range []bool{false, true} {
		f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, Conditions: true, DryRun: dryRun,
			Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Resource: schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}})
		if err != nil {
			t.Fatal(err)
		}
		p, err := f.Plan(context.Background(), withStatus(nil, ready), "")
		if err != nil || len(p.Resources) != 1 || p.Resources[0].Create != nil {
			t.Errorf("dry run %v: plan of an object with DatabaseReady True = %+v, %v; want no create", dryRun, p, err)
		}
		p, err = f.Plan(context.Background(), withStatus(nil), "")
		if err != nil || len(p.Resources) != 1 || p.Resources[0].Create == nil {
			t.Errorf("dry run %v: plan of an object without DatabaseReady = %+v, %v; want a create", dryRun, p, err)
		}
		p, err = f.Plan(context.Background(), withStatus(map[string]string{"wait": "yes"}, waiting), "")
		if err != nil || len(p.Resources) != 1 || p.Resources[0].Waits != "canceled the reconciliation" {
			t.Errorf("dry run %v: plan of a canceled reconciliation = %+v, %v; want Waits from this plan alone", dryRun, p, err)
		}
	}
}

// condDeleteOps deletes its database only when the object's DatabaseReady
// condition, as conditioncontext.Get finds it, says it was created; found
// records whether Get found the condition at all.
type condDeleteOps struct {
	planOps
	found *atomic.Int32 // 1: found, 2: not found
}

func (o condDeleteOps) NewDeletePatch(ctx context.Context, _, _, _ any) (*crud.Patch, error) {
	p := crud.NewPatch()
	c, ok := conditioncontext.Get(ctx, "DatabaseReady")
	if ok {
		o.found.Store(1)
	} else {
		o.found.Store(2)
	}
	if ok && c.Status == metav1.ConditionTrue {
		p.SetDeleteChange(described{})
	}
	return p, nil
}

func (o condDeleteOps) ApplyDeleteChange(context.Context, any, any) error { return nil }

// TestDryRunOfADeletedObjectPlansWithoutItsConditions: the delete chain of
// an object already gone (deleted at once, no finalizer held it) runs
// without conditions, as conditioncontext.ErrNoConditions says (there is
// no status to lock, nor to read): conditioncontext.Get finds none. A dry
// run planned it from the deleted object's last conditions, so a resource
// that decides from them planned a delete that the reconciliation does not
// make.
func TestDryRunOfADeletedObjectPlansWithoutItsConditions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	db := func() *unstructured.Unstructured {
		u := object("db", 1, nil)
		ready := map[string]any{"type": "DatabaseReady", "status": "True", "reason": "Created", "message": "db-1", "lastTransitionTime": "2026-01-01T00:00:00Z"}
		if err := unstructured.SetNestedSlice(u.Object, []any{ready}, "status", "conditions"); err != nil {
			t.Fatal(err)
		}
		return u
	}
	for _, dryRun := range []bool{false, true} {
		var found atomic.Int32
		r, err := crud.New(crud.Config{Ops: condDeleteOps{planOps: planOps{name: "database"}, found: &found}})
		if err != nil {
			t.Fatal(err)
		}
		inf := informertest.New()
		f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), Conditions: true, DryRun: dryRun,
			DisableFinalizers: true, BackOffFactory: fastBackOff,
			Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Resource: schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}})
		if err != nil {
			t.Fatal(err)
		}
		boot(t, f)
		if err := inf.Delete(db()); err != nil {
			t.Fatal(err)
		}
		pollUntil(t, "the delete chain of ns/db", func() bool { return len(f.Traces("ns/db")) > 0 })
		if got := found.Load(); got != 2 {
			t.Errorf("dry run %v: conditioncontext.Get in the delete chain of a deleted object found DatabaseReady (%d), want none", dryRun, got)
		}
		if p := f.Plans("ns/db"); dryRun && (len(p) != 1 || p[0].Delete != nil) {
			t.Errorf("dry run of a deleted object: plans %+v, want one without a delete, as the reconciliation makes none", p)
		}
	}
}

// existsKey is the context key under which initCtxOps's resource set puts
// whether the object's DatabaseReady condition is True.
type existsKey struct{}

// initCtxOps creates its database unless its resource set's InitCtx found
// the object's DatabaseReady condition True.
type initCtxOps struct {
	planOps
	creates *atomic.Int32
}

func (o initCtxOps) NewUpdatePatch(ctx context.Context, _, _, _ any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if exists, _ := ctx.Value(existsKey{}).(bool); !exists {
		p.SetCreateChange(described{})
	}
	return p, nil
}

func (o initCtxOps) ApplyCreateChange(context.Context, any, any) error {
	o.creates.Add(1)
	return nil
}

// TestPlanInitCtxReadsTheObjectsConditions: a resource set's InitCtx runs
// on the reconciliation's conditions, and finds the object's with
// conditioncontext.Get, as its resources do; so must it in a plan
// (Framework.Plan, a dry run), which runs InitCtx first as a
// reconciliation does. It ran there before the plan's conditions were
// made, found none, and the plan showed a create no reconciliation makes.
func TestPlanInitCtxReadsTheObjectsConditions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	initCtx := func(ctx context.Context, _ any) (context.Context, error) {
		c, ok := conditioncontext.Get(ctx, "DatabaseReady")
		return context.WithValue(ctx, existsKey{}, ok && c.Status == metav1.ConditionTrue), nil
	}
	db := object("db", 1, nil)
	ready := map[string]any{"type": "DatabaseReady", "status": "True", "reason": "Created", "message": "db-1", "lastTransitionTime": "2026-01-01T00:00:00Z"}
	if err := unstructured.SetNestedSlice(db.Object, []any{ready}, "status", "conditions"); err != nil {
		t.Fatal(err)
	}
	for _, dryRun := range []bool{false, true} {
		var creates atomic.Int32
		r, err := crud.New(crud.Config{Ops: initCtxOps{planOps: planOps{name: "database"}, creates: &creates}})
		if err != nil {
			t.Fatal(err)
		}
		set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, InitCtx: initCtx, Resources: []resource.Interface{r}})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
		if err != nil {
			t.Fatal(err)
		}
		inf := informertest.New(db)
		f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: rt, Conditions: true, DryRun: dryRun,
			DisableFinalizers: true, BackOffFactory: fastBackOff,
			Client: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Resource: schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}})
		if err != nil {
			t.Fatal(err)
		}
		boot(t, f)
		pollUntil(t, "a reconciliation of ns/db", func() bool { return len(f.Traces("ns/db")) > 0 })
		if n := creates.Load(); n != 0 {
			t.Errorf("dry run %v: the reconciliation created the database %d times, want 0 (InitCtx found DatabaseReady True)", dryRun, n)
		}
		if p := f.Plans("ns/db"); dryRun && (len(p) != 1 || p[0].Create != nil) {
			t.Errorf("dry run: plans %+v, want one without a create", p)
		}
		if p, err := f.Plan(context.Background(), db, ""); err != nil || len(p.Resources) != 1 || p.Resources[0].Create != nil {
			t.Errorf("dry run %v: Plan() = %+v, %v; want no create, as the reconciliation makes none", dryRun, p, err)
		}
	}
}
