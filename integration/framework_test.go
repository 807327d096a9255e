package integration

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operatorkit/operatorkit/context/finalizerskeptcontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/testenv"
	"github.com/operatorkit/operatorkit/trace"
)

// stepNames returns "resource/step:outcome" for each step of tr.
func stepNames(tr trace.Trace) []string {
	var out []string
	for _, s := range tr.Steps {
		out = append(out, s.Resource+"/"+s.Step+":"+string(s.Outcome))
	}
	return out
}

// lastTrace waits until the Framework kept a trace of key that matches.
func lastTrace(t *testing.T, f *framework.Framework, key string, match func(trace.Trace) bool) trace.Trace {
	t.Helper()
	var got trace.Trace
	poll(t, "a trace of "+key, func(context.Context) (bool, error) {
		for _, tr := range slices.Backward(f.Traces(key)) {
			if match(tr) {
				got = tr
				return true, nil
			}
		}
		return false, nil
	})
	return got
}

func hasStep(tr trace.Trace, step string, outcome trace.Outcome) bool {
	return slices.ContainsFunc(tr.Steps, func(s trace.Step) bool { return s.Step == step && s.Outcome == outcome })
}

// TestFrameworkLifecycle: create -> ConfigMap with the desired data and the
// finalizer; spec update -> ConfigMap follows; delete -> ConfigMap gone, then
// the object. Traces show each path step by step. No goroutine is left once
// Boot returns.
func TestFrameworkLifecycle(t *testing.T) {
	// Not parallel: its leak check looks at every goroutine of the process.
	ns := newNamespace(t)
	// Warm the server first: the Widget storage (cacher, etcd watch) it
	// starts lazily on first use is the server's, not a leak.
	ensureWidgetCRD(t)
	if _, err := widgetClient(t, ns).List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	checkLeaks := testenv.LeakCheck(t)
	ops := newConfigMapOps("configmap", "cm")
	f := startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, ops)))
	key := ns + "/w1"

	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	w, err := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(w.GetFinalizers(), f.Finalizer()) {
		t.Fatalf("widget finalizers = %v, want %s", w.GetFinalizers(), f.Finalizer())
	}
	created := lastTrace(t, f.Framework, key, func(tr trace.Trace) bool { return hasStep(tr, crud.StepApplyCreateChange, trace.OutcomeDone) })
	wantCreate := []string{
		"configmap/" + crud.StepGetCurrentState + ":done",
		"configmap/" + crud.StepGetDesiredState + ":done",
		"configmap/" + crud.StepNewUpdatePatch + ":done",
		"configmap/" + crud.StepApplyCreateChange + ":done",
		"configmap/" + crud.StepApplyUpdateChange + ":skipped",
		"configmap/" + crud.StepApplyDeleteChange + ":skipped",
	}
	if got := stepNames(created); !containsInOrder(got, wantCreate) {
		t.Errorf("create trace steps = %v, want in order %v", got, wantCreate)
	}
	if created.Result != framework.ResultSuccess || created.ResourceSet != "default" {
		t.Errorf("create trace result = %q set = %q, want success/default", created.Result, created.ResourceSet)
	}

	unstructured.SetNestedStringMap(w.Object, map[string]string{"a": "2", "b": "3"}, "spec", "data")
	if _, err := widgetClient(t, ns).Update(t.Context(), w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "2", "b": "3"})
	lastTrace(t, f.Framework, key, func(tr trace.Trace) bool { return hasStep(tr, crud.StepApplyUpdateChange, trace.OutcomeDone) })

	if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitConfigMapData(t, ns, "w1-cm", nil)
	waitWidgetGone(t, ns, "w1")
	deleted := lastTrace(t, f.Framework, key, func(tr trace.Trace) bool { return hasStep(tr, crud.StepApplyDeleteChange, trace.OutcomeDone) })
	if !hasStep(deleted, crud.StepNewDeletePatch, trace.OutcomeDone) {
		t.Errorf("delete trace steps = %v, want %s done", stepNames(deleted), crud.StepNewDeletePatch)
	}

	f.stop()
	checkLeaks()
}

func containsInOrder(got, want []string) bool {
	i := 0
	for _, g := range got {
		if i < len(want) && g == want[i] {
			i++
		}
	}
	return i == len(want)
}

// TestFrameworkDeletedWhileStopped: an object deleted while no Framework runs
// keeps its finalizer, and is cleaned up by the next Boot.
func TestFrameworkDeletedWhileStopped(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	f := startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, ops)))
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	f.stop()

	if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("widget must still exist (finalizer) while the framework is down: %v", err)
	}
	if w.GetDeletionTimestamp() == nil {
		t.Fatal("widget has no deletionTimestamp after delete")
	}

	startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, newConfigMapOps("configmap", "cm"))))
	waitConfigMapData(t, ns, "w1-cm", nil)
	waitWidgetGone(t, ns, "w1")
}

// TestFrameworkRetriesWithGrowingBackoff: a resource that fails three times
// is retried with growing intervals and converges once it stops failing.
func TestFrameworkRetriesWithGrowingBackoff(t *testing.T) {
	// Not parallel: it checks that each gap is longer than the one before,
	// and on a loaded machine (a cold make test ran it in parallel) a late
	// first retry made the first gap longer than the second.
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	var mu sync.Mutex
	var attempts []time.Time
	ops.beforeApplyCreate = func(context.Context) error {
		mu.Lock()
		defer mu.Unlock()
		attempts = append(attempts, time.Now())
		if len(attempts) <= 3 {
			return errInjected
		}
		return nil
	}
	reg := prometheus.NewRegistry()
	backOff := func() backoff.BackOff {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.Multiplier, b.RandomizationFactor, b.MaxElapsedTime = 200*time.Millisecond, 2, 0, 0
		b.Reset()
		return b
	}
	f := startFramework(t, ns, frameworkOptions{backOff: backOff, registry: reg}, resourceSet(t, "", crudResource(t, ops)))
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})

	mu.Lock()
	defer mu.Unlock()
	if len(attempts) != 4 {
		t.Fatalf("apply create attempts = %d, want 4 (3 failures, 1 success)", len(attempts))
	}
	var gaps []time.Duration
	for i := 1; i < len(attempts); i++ {
		gaps = append(gaps, attempts[i].Sub(attempts[i-1]))
	}
	// 200ms, 400ms, 800ms: each gap at least its backoff, and growing.
	for i, g := range gaps {
		min := 200 * time.Millisecond << i
		if g < min {
			t.Errorf("gap %d = %s, want >= %s (gaps %v)", i, g, min, gaps)
		}
		if i > 0 && g <= gaps[i-1] {
			t.Errorf("gaps do not grow: %v", gaps)
		}
	}
	errs := metricSum(t, reg, "operatorkit_framework_errors_total", map[string]string{"resource": "configmap", "step": crud.StepApplyCreateChange})
	if errs != 3 {
		t.Errorf("operatorkit_framework_errors_total{resource=configmap,step=apply create change} = %v, want 3", errs)
	}
	tr := lastTrace(t, f.Framework, ns+"/w1", func(tr trace.Trace) bool { return tr.Result == framework.ResultError })
	if !strings.Contains(tr.Error, errInjected.Error()) || !hasStep(tr, crud.StepApplyCreateChange, trace.OutcomeError) {
		t.Errorf("error trace = %+v, want the injected error at %s", tr, crud.StepApplyCreateChange)
	}
}

// signalResource fires a signal in EnsureCreated or EnsureDeleted.
type signalResource struct {
	name     string
	onCreate func(ctx context.Context)
	onDelete func(ctx context.Context)
}

func (r *signalResource) Name() string { return r.name }
func (r *signalResource) EnsureCreated(ctx context.Context, obj any) error {
	if r.onCreate != nil {
		r.onCreate(ctx)
	}
	return nil
}
func (r *signalResource) EnsureDeleted(ctx context.Context, obj any) error {
	if r.onDelete != nil {
		r.onDelete(ctx)
	}
	return nil
}

var _ resource.Interface = (*signalResource)(nil)

// TestFrameworkSignals: each context signal observed on the real server.
func TestFrameworkSignals(t *testing.T) {
	t.Parallel()
	t.Run("reconciliation canceled stops the chain as a success", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		canceler := &signalResource{name: "canceler", onCreate: reconciliationcanceledcontext.SetCanceled}
		f := startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", canceler, crudResource(t, newConfigMapOps("configmap", "cm"))))
		createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
		lastTrace(t, f.Framework, ns+"/w1", func(tr trace.Trace) bool { return tr.Result == framework.ResultSuccess })
		cm, err := getConfigMap(t.Context(), t, ns, "w1-cm")
		if err != nil || cm != nil {
			t.Fatalf("configmap after canceled reconciliation = %v, %v; want none", cm, err)
		}
	})
	t.Run("resource canceled skips only the rest of itself", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		first := newConfigMapOps("first", "first")
		first.onCurrent = resourcecanceledcontext.SetCanceled
		second := newConfigMapOps("second", "second")
		startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, first), crudResource(t, second)))
		createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
		waitConfigMapData(t, ns, "w1-second", map[string]string{"a": "1"})
		if cm, err := getConfigMap(t.Context(), t, ns, "w1-first"); err != nil || cm != nil {
			t.Fatalf("configmap of the canceled resource = %v, %v; want none", cm, err)
		}
	})
	t.Run("finalizer kept holds the delete until released", func(t *testing.T) {
		t.Parallel()
		ns := newNamespace(t)
		var keep sync.Mutex
		keeping := true
		keeper := &signalResource{name: "keeper", onDelete: func(ctx context.Context) {
			keep.Lock()
			defer keep.Unlock()
			if keeping {
				finalizerskeptcontext.SetKept(ctx)
			}
		}}
		f := startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, newConfigMapOps("configmap", "cm")), keeper))
		createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
		waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
		if err := widgetClient(t, ns).Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitConfigMapData(t, ns, "w1-cm", nil)
		lastTrace(t, f.Framework, ns+"/w1", func(tr trace.Trace) bool { return tr.Result == framework.ResultFinalizerKept })
		w, err := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
		if err != nil || !slices.Contains(w.GetFinalizers(), f.Finalizer()) {
			t.Fatalf("widget while finalizer kept: err=%v; want it present with %s", err, f.Finalizer())
		}
		keep.Lock()
		keeping = false
		keep.Unlock()
		waitWidgetGone(t, ns, "w1")
	})
}

// TestFrameworkRoutesByVersionLabel: two resource sets, each handling the
// objects labelled with its version; an object no set handles is reported
// and not retried hot.
func TestFrameworkRoutesByVersionLabel(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	reg := prometheus.NewRegistry()
	v1 := resourceSet(t, "1", crudResource(t, newConfigMapOps("configmap-v1", "v1")))
	v2 := resourceSet(t, "2", crudResource(t, newConfigMapOps("configmap-v2", "v2")))
	f := startFramework(t, ns, frameworkOptions{registry: reg}, v1, v2)
	createWidget(t, newWidget(ns, "a", "1", map[string]string{"x": "a"}))
	createWidget(t, newWidget(ns, "b", "2", map[string]string{"x": "b"}))
	createWidget(t, newWidget(ns, "c", "9", map[string]string{"x": "c"}))
	waitConfigMapData(t, ns, "a-v1", map[string]string{"x": "a"})
	waitConfigMapData(t, ns, "b-v2", map[string]string{"x": "b"})
	for _, name := range []string{"a-v2", "b-v1", "c-v1", "c-v2"} {
		if cm, err := getConfigMap(t.Context(), t, ns, name); err != nil || cm != nil {
			t.Errorf("configmap %s = %v, %v; want none", name, cm, err)
		}
	}
	tr := lastTrace(t, f.Framework, ns+"/c", func(tr trace.Trace) bool { return tr.Result == framework.ResultNoResourceSet })
	if !strings.Contains(tr.Error, "no resource set") {
		t.Errorf("trace error = %q, want it to say no resource set", tr.Error)
	}
	if tr := f.Traces(ns + "/a"); len(tr) == 0 || tr[len(tr)-1].ResourceSet != "1" {
		t.Errorf("traces of a = %+v, want resource set 1", tr)
	}
	// Not retried hot: one reconciliation for c (no requeue), whatever the wait.
	if n := trace.Reconciliations(f.Traces(ns + "/c")); n != 1 {
		t.Errorf("reconciliations of the unroutable object = %d, want 1", n)
	}
}

// TestFrameworkDryRunWritesNothing: in dry-run mode the Framework plans every
// object and writes nothing, not even its finalizer.
func TestFrameworkDryRunWritesNothing(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	counter := requestcount.New()
	f := startFramework(t, ns, frameworkOptions{dryRun: true, config: counter.Wrap(env.Config())}, resourceSet(t, "", crudResource(t, newConfigMapOps("configmap", "cm"))))
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	poll(t, "a dry-run plan", func(context.Context) (bool, error) { return len(f.Plans(ns+"/w1")) == 1, nil })
	plan := f.Plans(ns + "/w1")[0]
	if plan.Create == nil || plan.Update != nil || plan.Delete != nil {
		t.Fatalf("plan = %+v, want only a create", plan)
	}
	if s := counter.Snapshot(); s.Writes != 0 {
		t.Fatalf("dry-run framework made %d writes (%v), want 0", s.Writes, s.ByVerb)
	}
	if cm, err := getConfigMap(t.Context(), t, ns, "w1-cm"); err != nil || cm != nil {
		t.Fatalf("configmap in dry run = %v, %v; want none", cm, err)
	}
	w, err := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil || len(w.GetFinalizers()) != 0 {
		t.Fatalf("widget finalizers in dry run = %v (err %v), want none", w.GetFinalizers(), err)
	}
}

// TestPlanChangesNothing: Plan on a changed spec lists exactly the update it
// would make, and the server's objects keep their resourceVersions.
func TestPlanChangesNothing(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	f := startFramework(t, ns, frameworkOptions{}, resourceSet(t, "", crudResource(t, ops)))
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
	f.stop()

	w, err := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm, err := getConfigMap(t.Context(), t, ns, "w1-cm")
	if err != nil || cm == nil {
		t.Fatalf("configmap: %v, %v", cm, err)
	}
	changed := w.DeepCopy()
	unstructured.SetNestedStringMap(changed.Object, map[string]string{"a": "2"}, "spec", "data")
	plans, err := framework.Plan(t.Context(), changed, []resource.Interface{crudResource(t, ops)})
	if err != nil {
		t.Fatal(err)
	}
	if len(plans) != 1 || plans[0].Create != nil || plans[0].Delete != nil || plans[0].Update == nil {
		t.Fatalf("plans = %+v, want exactly one update", plans)
	}
	if got := plans[0].Update.(*corev1.ConfigMap).Data; got["a"] != "2" || len(got) != 1 {
		t.Fatalf("planned update data = %v, want a=2", got)
	}
	w2, _ := widgetClient(t, ns).Get(t.Context(), "w1", metav1.GetOptions{})
	cm2, _ := getConfigMap(t.Context(), t, ns, "w1-cm")
	if w2.GetResourceVersion() != w.GetResourceVersion() || cm2.ResourceVersion != cm.ResourceVersion || cm2.Data["a"] != "1" {
		t.Fatalf("Plan changed the server: widget rv %s -> %s, configmap rv %s -> %s data %v",
			w.GetResourceVersion(), w2.GetResourceVersion(), cm.ResourceVersion, cm2.ResourceVersion, cm2.Data)
	}
}
