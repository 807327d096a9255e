package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

// statusOptions configures startStatusFramework.
type statusOptions struct {
	backOff           func() backoff.BackOff
	config            *rest.Config // defaults to env.Config()
	gvr               schema.GroupVersionResource
	resync            time.Duration
	dropManagedFields bool
	events            *eventRecorder
	// dynamicOnly leaves Config.MetadataClient empty: the Framework writes
	// finalizers and the status through the dynamic client. By default it
	// has a metadata client, as operator.NewFramework gives it.
	dynamicOnly bool
	// disableFinalizers sets Config.DisableFinalizers.
	disableFinalizers bool
}

// startStatusFramework boots a Framework with Config.Conditions over the
// widgets (or opts.gvr) of namespace ns and stops it in t.Cleanup.
func startStatusFramework(t *testing.T, ns string, opts statusOptions, sets ...*router.ResourceSet) *runningFramework {
	t.Helper()
	ensureWidgetCRD(t)
	cfg := opts.config
	if cfg == nil {
		cfg = env.Config()
	}
	gvr := opts.gvr
	if gvr.Resource == "" {
		gvr = widgetGVR
	}
	dc := dynamicClient(t, cfg)
	reg := prometheus.NewRegistry()
	inf, err := informer.New(informer.Config{Client: dc, GVR: gvr, Namespace: ns, Registerer: reg,
		ResyncPeriod: opts.resync, DropManagedFields: opts.dropManagedFields})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	config := framework.Config{
		Name:            "widgets",
		Informer:        inf,
		ResourceRouter:  rt,
		Client:          dc,
		Resource:        gvr,
		Logger:          log.NewNopLogger(),
		Registerer:      reg,
		BackOffFactory:  opts.backOff,
		Workers:         2,
		Conditions:      true,
		TracesPerObject: 64,

		DisableFinalizers: opts.disableFinalizers,
	}
	if opts.events != nil {
		config.EventRecorder = opts.events
	}
	if !opts.dynamicOnly {
		if config.MetadataClient, err = metadata.NewForConfig(cfg); err != nil {
			t.Fatal(err)
		}
	}
	f, err := framework.New(config)
	if err != nil {
		t.Fatal(err)
	}
	return boot(t, f)
}

// statusResource is a resource whose EnsureCreated runs create.
type statusResource struct {
	name   string
	calls  atomic.Int64
	create func(ctx context.Context, obj *unstructured.Unstructured) error
}

func (r *statusResource) Name() string { return r.name }
func (r *statusResource) EnsureCreated(ctx context.Context, obj any) error {
	r.calls.Add(1)
	if r.create == nil {
		return nil
	}
	return r.create(ctx, obj.(*unstructured.Unstructured))
}
func (r *statusResource) EnsureDeleted(context.Context, any) error { return nil }

var _ resource.Interface = (*statusResource)(nil)

// eventRecorder is a record.EventRecorder that keeps every event in memory.
type eventRecorder struct {
	mu     sync.Mutex
	events []string // "<object> <type> <reason> <message>"
}

func (l *eventRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	name := ""
	if acc, err := meta.Accessor(obj); err == nil {
		name = acc.GetName()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, strings.Join([]string{name, eventType, reason, message}, " "))
}

func (l *eventRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	l.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func (l *eventRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	l.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

// count returns how many events of object have eventType and reason.
func (l *eventRecorder) count(object, eventType, reason string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	prefix := strings.Join([]string{object, eventType, reason}, " ") + " "
	n := 0
	for _, e := range l.events {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

func (l *eventRecorder) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

// widgetStatus is what the tests read of an object's status.
type widgetStatus struct {
	obj        *unstructured.Unstructured
	generation int64
	observed   int64
	conditions []metav1.Condition
}

func (s widgetStatus) condition(t string) *metav1.Condition {
	return meta.FindStatusCondition(s.conditions, t)
}

func readWidgetStatus(ctx context.Context, rc dynamic.ResourceInterface, name string) (widgetStatus, error) {
	u, err := rc.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return widgetStatus{}, err
	}
	s := widgetStatus{obj: u, generation: u.GetGeneration()}
	s.observed, _, _ = unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	list, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, item := range list {
		var c metav1.Condition
		if m, ok := item.(map[string]any); ok && runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c) == nil {
			s.conditions = append(s.conditions, c)
		}
	}
	return s, nil
}

// waitStatus polls object name of rc until match holds and returns the status
// that matched.
func waitStatus(t *testing.T, rc dynamic.ResourceInterface, name, what string, match func(widgetStatus) bool) widgetStatus {
	t.Helper()
	var got widgetStatus
	poll(t, name+": "+what, func(ctx context.Context) (bool, error) {
		s, err := readWidgetStatus(ctx, rc, name)
		if err != nil {
			return false, err
		}
		got = s
		return match(s), nil
	})
	return got
}

func isTrue(s widgetStatus, t string) bool {
	c := s.condition(t)
	return c != nil && c.Status == metav1.ConditionTrue
}

// readyAt matches Ready True with observedGeneration at the object's
// generation.
func readyAt(s widgetStatus) bool {
	c := s.condition(conditioncontext.Ready)
	return c != nil && c.Status == metav1.ConditionTrue && s.observed == s.generation && c.ObservedGeneration == s.generation
}

func updateSpec(t *testing.T, rc dynamic.ResourceInterface, name string, data map[string]string) *unstructured.Unstructured {
	t.Helper()
	w, err := rc.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedStringMap(w.Object, data, "spec", "data"); err != nil {
		t.Fatal(err)
	}
	w, err = rc.Update(t.Context(), w, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// waitReconciled waits until f has a trace of key with result, started
// after since.
func waitReconciled(t *testing.T, f *framework.Framework, key, result string, since time.Time) trace.Trace {
	t.Helper()
	return lastTrace(t, f, key, func(tr trace.Trace) bool { return tr.Result == result && tr.Start.After(since) })
}

func hasFrameworkStep(tr trace.Trace, step string, outcome trace.Outcome) bool {
	return slices.ContainsFunc(tr.Steps, func(s trace.Step) bool {
		return s.Resource == "framework" && s.Step == step && s.Outcome == outcome
	})
}

func constantBackOff(d time.Duration) func() backoff.BackOff {
	return func() backoff.BackOff { return backoff.NewConstantBackOff(d) }
}

// TestStatusReadyAfterSuccess: a successful chain makes Ready True with
// the Framework's reason, status.observedGeneration and the condition's
// observedGeneration at the object's generation, and no Reconciling or
// Stalled (abnormal-true conditions are absent while they do not hold).
func TestStatusReadyAfterSuccess(t *testing.T) {
	t.Parallel()
	// Through the metadata client (the default of operator.NewFramework,
	// whose answer is the object's metadata only) and through the dynamic
	// client alone.
	for _, dynamicOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("dynamicOnly=%v", dynamicOnly), func(t *testing.T) {
			t.Parallel()
			testStatusReadyAfterSuccess(t, statusOptions{dynamicOnly: dynamicOnly})
		})
	}
}

func testStatusReadyAfterSuccess(t *testing.T, opts statusOptions) {
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	startStatusFramework(t, ns, opts, resourceSet(t, "", crudResource(t, ops)))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))

	s := waitStatus(t, rc, "w1", "Ready True at its generation", readyAt)
	ready := s.condition(conditioncontext.Ready)
	if ready.Reason != framework.ReasonSucceeded || ready.LastTransitionTime.IsZero() {
		t.Errorf("Ready = %+v, want reason %s and a lastTransitionTime", ready, framework.ReasonSucceeded)
	}
	if s.observed != 1 {
		t.Errorf("status.observedGeneration = %d, want 1", s.observed)
	}
	for _, ty := range []string{conditioncontext.Reconciling, conditioncontext.Stalled} {
		if c := s.condition(ty); c != nil {
			t.Errorf("%s = %+v after a success, want absent", ty, c)
		}
	}
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "1"})
}

// TestStatusLastTransitionTimeStays: a new generation reconciled with the
// same outcome moves observedGeneration but keeps Ready's
// lastTransitionTime.
func TestStatusLastTransitionTimeStays(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	startStatusFramework(t, ns, statusOptions{}, resourceSet(t, "", crudResource(t, ops)))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	first := waitStatus(t, rc, "w1", "Ready True at generation 1", readyAt)
	ltt := first.condition(conditioncontext.Ready).LastTransitionTime

	// lastTransitionTime has a resolution of one second: let the clock move
	// past it, so that a rewritten time would show.
	poll(t, "the clock to pass Ready's lastTransitionTime", func(context.Context) (bool, error) {
		return time.Since(ltt.Time) > 1500*time.Millisecond, nil
	})
	updateSpec(t, rc, "w1", map[string]string{"a": "2"})
	second := waitStatus(t, rc, "w1", "Ready True at generation 2", func(s widgetStatus) bool { return s.generation == 2 && readyAt(s) })
	if got := second.condition(conditioncontext.Ready).LastTransitionTime; !got.Equal(&ltt) {
		t.Errorf("Ready's lastTransitionTime = %s after a reconciliation that kept it True, want %s", got, ltt)
	}
}

// TestStatusReadyFalseNamesResourceAndStep: a failing resource makes Ready
// False with "<Resource><Step>Failed" and the error, and Reconciling True
// while it is retried; the fix makes Ready True and removes Reconciling.
// Events are recorded when a condition changes, not for every failure.
func TestStatusReadyFalseNamesResourceAndStep(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ops := newConfigMapOps("configmap", "cm")
	var failing atomic.Bool
	failing.Store(true)
	ops.beforeApplyCreate = func(context.Context) error {
		if failing.Load() {
			return errInjected
		}
		return nil
	}
	events := &eventRecorder{}
	startStatusFramework(t, ns, statusOptions{backOff: constantBackOff(30 * time.Millisecond), events: events},
		resourceSet(t, "", crudResource(t, ops)))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))

	const reason = "ConfigmapApplyCreateChangeFailed"
	s := waitStatus(t, rc, "w1", "Ready False naming the resource and step", func(s widgetStatus) bool {
		c := s.condition(conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == reason
	})
	ready := s.condition(conditioncontext.Ready)
	if !strings.Contains(ready.Message, errInjected.Error()) || !strings.Contains(ready.Message, crud.StepApplyCreateChange) {
		t.Errorf("Ready's message = %q, want the error and the step", ready.Message)
	}
	rec := s.condition(conditioncontext.Reconciling)
	if rec == nil || rec.Status != metav1.ConditionTrue || rec.Reason != framework.ReasonProgressingWithRetry {
		t.Errorf("Reconciling = %+v while retrying, want True %s", rec, framework.ReasonProgressingWithRetry)
	}
	if c := s.condition(conditioncontext.Stalled); c != nil {
		t.Errorf("Stalled = %+v for an error that is retried, want absent", c)
	}
	if s.observed != 1 || ready.ObservedGeneration != 1 {
		t.Errorf("observedGeneration = %d, Ready's = %d; want 1 (the failure is about generation 1)", s.observed, ready.ObservedGeneration)
	}

	// Several failed reconciliations with the same outcome: one event each.
	poll(t, "more failed attempts", func(context.Context) (bool, error) {
		ops.mu.Lock()
		defer ops.mu.Unlock()
		return ops.applyCreates >= 4, nil
	})
	if n := events.count("w1", "Warning", reason); n != 1 {
		t.Errorf("Warning %s events = %d after several failures, want 1: %q", reason, n, events.all())
	}
	if n := events.count("w1", "Normal", framework.ReasonProgressingWithRetry); n != 1 {
		t.Errorf("Normal %s events = %d, want 1: %q", framework.ReasonProgressingWithRetry, n, events.all())
	}

	failing.Store(false)
	s = waitStatus(t, rc, "w1", "Ready True after the fix", readyAt)
	if c := s.condition(conditioncontext.Reconciling); c != nil {
		t.Errorf("Reconciling = %+v after the fix, want absent", c)
	}
	poll(t, "the Normal Ready event", func(context.Context) (bool, error) {
		return events.count("w1", "Normal", framework.ReasonSucceeded) == 1, nil
	})
}

// TestStatusStalledOnPermanentError: a permanent error makes Stalled True
// and Ready False with the same reason, and is not retried.
func TestStatusStalledOnPermanentError(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	validator := &statusResource{name: "validator", create: func(_ context.Context, obj *unstructured.Unstructured) error {
		if obj.GetName() == "bad" {
			return retry.Permanent(errors.New("spec.image must not be empty"))
		}
		return nil
	}}
	events := &eventRecorder{}
	f := startStatusFramework(t, ns, statusOptions{backOff: constantBackOff(5 * time.Millisecond), events: events},
		resourceSet(t, "", validator))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "bad", "", nil))

	const reason = "ValidatorEnsureCreatedFailed"
	s := waitStatus(t, rc, "bad", "Stalled True", func(s widgetStatus) bool { return isTrue(s, conditioncontext.Stalled) })
	stalled, ready := s.condition(conditioncontext.Stalled), s.condition(conditioncontext.Ready)
	if stalled.Reason != reason || !strings.Contains(stalled.Message, "spec.image must not be empty") {
		t.Errorf("Stalled = %+v, want reason %s and the error", stalled, reason)
	}
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != reason {
		t.Errorf("Ready = %+v, want False %s", ready, reason)
	}
	if c := s.condition(conditioncontext.Reconciling); c != nil {
		t.Errorf("Reconciling = %+v for a permanent error, want absent (the Framework gave up)", c)
	}
	if s.observed != s.generation {
		t.Errorf("status.observedGeneration = %d, want %d", s.observed, s.generation)
	}
	// Its reconciliation records events and its trace after the status
	// write: wait for its end before counting them.
	lastTrace(t, f.Framework, ns+"/bad", func(tr trace.Trace) bool { return tr.Result != "" })

	// A later object is reconciled in full; with a 5 ms backoff a retried
	// "bad" would have run many times meanwhile.
	createWidget(t, newWidget(ns, "good", "", nil))
	waitStatus(t, rc, "good", "Ready True", readyAt)
	if n := trace.Reconciliations(f.Traces(ns + "/bad")); n != 1 {
		t.Errorf("reconciliations of the stalled object = %d, want 1 (not retried)", n)
	}
	if n := events.count("bad", "Warning", reason); n != 2 { // Ready False and Stalled True
		t.Errorf("Warning %s events = %d, want 2 (Ready, Stalled): %q", reason, n, events.all())
	}
}

// TestStatusWritesPerReconciliation counts the Framework's requests: the
// first reconciliation writes the finalizer and the status once each; a
// steady resync writes nothing; a spec change writes the status once.
func TestStatusWritesPerReconciliation(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	counter := requestcount.New()
	ops := newConfigMapOps("configmap", "cm") // its own client: not counted
	f := startStatusFramework(t, ns, statusOptions{config: counter.Wrap(env.Config()), resync: time.Second},
		resourceSet(t, "", crudResource(t, ops)))
	rc := widgetClient(t, ns)
	key := ns + "/w1"
	start := counter.Snapshot()

	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	waitStatus(t, rc, "w1", "Ready True", readyAt)
	// The counter counts a request when its answer arrives, which can be
	// after the status shows: wait for the reconciliation to end.
	lastTrace(t, f.Framework, key, func(tr trace.Trace) bool { return tr.Result == framework.ResultSuccess })
	created := counter.Snapshot().Sub(start)
	if created.ByVerb["patch"] != 2 { // the finalizer, the status
		t.Errorf("writes of the first reconciliation = %s, want 2 patches (finalizer, status)", created)
	}

	// Resyncs reconcile the unchanged object: no write at all.
	since := time.Now()
	steady := counter.Snapshot()
	for range 3 {
		since = waitReconciled(t, f.Framework, key, framework.ResultSuccess, since).Start
	}
	if d := counter.Snapshot().Sub(steady); d.Writes != 0 {
		t.Errorf("writes during steady resyncs = %s, want none", d)
	}

	// A spec change: one status write (observedGeneration), then steady again.
	before := counter.Snapshot()
	updateSpec(t, rc, "w1", map[string]string{"a": "2"})
	waitStatus(t, rc, "w1", "Ready True at generation 2", func(s widgetStatus) bool { return s.generation == 2 && readyAt(s) })
	waitConfigMapData(t, ns, "w1-cm", map[string]string{"a": "2"})
	since = time.Now()
	for range 3 {
		since = waitReconciled(t, f.Framework, key, framework.ResultSuccess, since).Start
	}
	changed := counter.Snapshot().Sub(before)
	if changed.ByVerb["patch"] != 1 {
		t.Errorf("status writes for a spec change = %s, want 1 patch", changed)
	}
	total := counter.Snapshot().Sub(start)
	if total.ByCode[409] != 0 {
		t.Errorf("conflicts = %d, want none: %s", total.ByCode[409], total)
	}
	var reconciliations int
	for _, tr := range f.Traces(key) {
		if tr.Result == framework.ResultSuccess {
			reconciliations++
		}
	}
	t.Logf("requests of the Framework: %s; successful reconciliations kept in traces: %d", total, reconciliations)
}

// TestStatusConcurrentSpecChange: the spec changes while the chain runs,
// between the read and the status write. The status write, a server-side
// apply without resourceVersion (the object carries the Framework's
// finalizer, so it is the one read), succeeds all the same (no 409), and
// the next generation is reconciled after it.
func TestStatusConcurrentSpecChange(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	counter := requestcount.New()
	rc := widgetClient(t, ns)
	var once sync.Once
	editErr := make(chan error, 1)
	editor := &statusResource{name: "editor", create: func(ctx context.Context, obj *unstructured.Unstructured) error {
		once.Do(func() {
			// The user edits the spec while the chain runs.
			w, err := rc.Get(ctx, obj.GetName(), metav1.GetOptions{})
			if err == nil {
				_ = unstructured.SetNestedStringMap(w.Object, map[string]string{"a": "edited"}, "spec", "data")
				_, err = rc.Update(ctx, w, metav1.UpdateOptions{})
			}
			editErr <- err
		})
		return nil
	}}
	f := startStatusFramework(t, ns, statusOptions{config: counter.Wrap(env.Config())}, resourceSet(t, "", editor))
	start := counter.Snapshot()
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	if err := <-editErr; err != nil {
		t.Fatalf("concurrent spec change: %v", err)
	}
	waitStatus(t, rc, "w1", "Ready True at generation 2", func(s widgetStatus) bool { return s.generation == 2 && readyAt(s) })

	first := f.Traces(ns + "/w1")[0]
	if first.Result != framework.ResultSuccess || !hasStep(first, framework.StepWriteStatus, trace.OutcomeDone) {
		t.Errorf("first reconciliation (generation 1) = %s %v, want a success with its status write done despite the spec change", first.Result, stepNames(first))
	}
	if d := counter.Snapshot().Sub(start); d.ByCode[409] != 0 {
		t.Errorf("conflicts = %d, want none: %s", d.ByCode[409], d)
	}
}

// TestStatusResourceCondition: a resource owns a condition of its own,
// written with the Framework's at the end of the chain and kept while the
// resource does not set it again; a condition another writer added stays.
// It runs with managedFields in the cache and without (the Framework reads
// them from the API server then).
func TestStatusResourceCondition(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("DropManagedFields=%v", drop), func(t *testing.T) {
			t.Parallel()
			ns := newNamespace(t)
			var report atomic.Bool
			report.Store(true)
			db := &statusResource{name: "database", create: func(ctx context.Context, obj *unstructured.Unstructured) error {
				if report.Load() {
					conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Provisioned", "database db-1 is ready")
				}
				return nil
			}}
			startStatusFramework(t, ns, statusOptions{dropManagedFields: drop}, resourceSet(t, "", db))
			rc := widgetClient(t, ns)
			createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
			s := waitStatus(t, rc, "w1", "DatabaseReady and Ready", func(s widgetStatus) bool {
				return readyAt(s) && isTrue(s, "DatabaseReady")
			})
			if c := s.condition("DatabaseReady"); c.Reason != "Provisioned" || c.Message != "database db-1 is ready" || c.ObservedGeneration != 1 {
				t.Errorf("DatabaseReady = %+v, want Provisioned at generation 1", c)
			}

			// Another writer adds a condition of its own.
			patch := `[{"op":"add","path":"/status/conditions/-","value":{"type":"Foreign","status":"True","reason":"Other","message":"","lastTransitionTime":"2020-01-01T00:00:00Z"}}]`
			if _, err := rc.Patch(t.Context(), "w1", types.JSONPatchType, []byte(patch), metav1.PatchOptions{FieldManager: "someone-else"}, "status"); err != nil {
				t.Fatal(err)
			}
			report.Store(false)
			updateSpec(t, rc, "w1", map[string]string{"a": "2"})
			s = waitStatus(t, rc, "w1", "Ready at generation 2", func(s widgetStatus) bool { return s.generation == 2 && readyAt(s) })
			if c := s.condition("DatabaseReady"); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != 1 {
				t.Errorf("DatabaseReady = %+v after a reconciliation that did not set it, want it kept as it was", c)
			}
			if c := s.condition("Foreign"); c == nil || c.Reason != "Other" {
				t.Errorf("Foreign = %+v, want the other writer's condition kept: %+v", c, s.conditions)
			}
		})
	}
}

// TestStatusEventsOnChangeOnly: conditions that appear in their good state
// (a new widget that becomes Ready) record no event; steady reconciliations
// record none; a condition that changes records one.
func TestStatusEventsOnChangeOnly(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	events := &eventRecorder{}
	var resized atomic.Bool
	db := &statusResource{name: "database", create: func(ctx context.Context, _ *unstructured.Unstructured) error {
		reason := "Provisioned"
		if resized.Load() {
			reason = "Resized"
		}
		conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, reason, "")
		return nil
	}}
	f := startStatusFramework(t, ns, statusOptions{events: events, resync: time.Second}, resourceSet(t, "", db))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", nil))
	waitStatus(t, rc, "w1", "Ready and DatabaseReady", func(s widgetStatus) bool { return readyAt(s) && isTrue(s, "DatabaseReady") })
	since := time.Now()
	for range 3 {
		since = waitReconciled(t, f.Framework, ns+"/w1", framework.ResultSuccess, since).Start
	}
	if got := events.all(); len(got) != 0 {
		t.Errorf("events of a new widget that became Ready, and of steady resyncs = %q, want none", got)
	}

	resized.Store(true)
	want := []string{"w1 Normal Resized DatabaseReady is True"}
	poll(t, "the event of the changed condition", func(context.Context) (bool, error) {
		return len(events.all()) >= len(want), nil
	})
	for range 3 {
		since = waitReconciled(t, f.Framework, ns+"/w1", framework.ResultSuccess, since).Start
	}
	if got := events.all(); !slices.Equal(got, want) {
		t.Errorf("events after the change and steady resyncs = %q, want only %q", got, want)
	}
}

// TestStatusInvalidCondition: a resource that sets a condition type that is
// not a qualified name gets a permanent error naming the object and the
// field, shown as Ready False and Stalled True; nothing is retried.
func TestStatusInvalidCondition(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	bad := &statusResource{name: "bad", create: func(ctx context.Context, _ *unstructured.Unstructured) error {
		conditioncontext.Set(ctx, "not a name!", metav1.ConditionTrue, "Fine", "")
		return nil
	}}
	f := startStatusFramework(t, ns, statusOptions{backOff: constantBackOff(5 * time.Millisecond)}, resourceSet(t, "", bad))
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", nil))
	s := waitStatus(t, rc, "w1", "Stalled True", func(s widgetStatus) bool { return isTrue(s, conditioncontext.Stalled) })
	stalled := s.condition(conditioncontext.Stalled)
	if stalled.Reason != framework.ReasonInvalidCondition || !strings.Contains(stalled.Message, "Widget "+ns+"/w1") ||
		!strings.Contains(stalled.Message, "status.conditions[not a name!].type") {
		t.Errorf("Stalled = %+v, want %s naming the object and the field", stalled, framework.ReasonInvalidCondition)
	}
	if c := s.condition("not a name!"); c != nil {
		t.Errorf("the invalid condition was written: %+v", c)
	}
	// The Framework keeps a reconciliation's trace when it ends, after its
	// status write: wait for it.
	lastTrace(t, f.Framework, ns+"/w1", func(tr trace.Trace) bool { return tr.Result != "" })
	tr := f.Traces(ns + "/w1")
	if len(tr) != 1 || tr[0].Result != framework.ResultPermanent {
		t.Errorf("reconciliations = %d (first %q), want 1 permanent error", len(tr), tr[0].Result)
	}
}

// TestStatusNoSubresource: a CRD without a status subresource makes the
// status write fail with a permanent error that names the object and the
// subresource; it is not retried, and nothing panics.
func TestStatusNoSubresource(t *testing.T) {
	// Parallel: the Gadget CRD it creates (gadgets.fw.test.operatorkit.io)
	// is no other test's.
	t.Parallel()
	ns := newNamespace(t)
	gvr := schema.GroupVersionResource{Group: widgetGVR.Group, Version: "v1", Resource: "gadgets"}
	crd := widgetCRD()
	crd.Name = gvr.Resource + "." + gvr.Group
	crd.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Singular: "gadget", Kind: "Gadget", ListKind: "GadgetList"}
	crd.Spec.Versions[0].Subresources = nil
	c, err := crdclient.New(crdclient.Config{Client: apiextensionsclient.NewForConfigOrDie(env.Config())})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureCreated(t.Context(), crd, nil); err != nil {
		t.Fatal(err)
	}
	r := &statusResource{name: "noop"}
	f := startStatusFramework(t, ns, statusOptions{gvr: gvr, backOff: constantBackOff(5 * time.Millisecond)}, resourceSet(t, "", r))
	gc := dynamicClient(t, env.Config()).Resource(gvr).Namespace(ns)
	for _, name := range []string{"g1", "g2"} {
		g := newWidget(ns, name, "", nil)
		g.SetKind("Gadget")
		if _, err := gc.Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr := lastTrace(t, f.Framework, ns+"/"+name, func(tr trace.Trace) bool { return tr.Result != "" })
		if tr.Result != framework.ResultPermanent || !strings.Contains(tr.Error, "no status subresource") || !strings.Contains(tr.Error, "Gadget "+ns+"/"+name) {
			t.Fatalf("reconciliation of %s = %s %q, want a permanent error naming the object and the missing subresource", name, tr.Result, tr.Error)
		}
	}
	if n := trace.Reconciliations(f.Traces(ns + "/g1")); n != 1 {
		t.Errorf("reconciliations of g1 = %d, want 1 (a permanent error is not retried)", n)
	}
}

// externalAPI is a fake API outside Kubernetes whose creates are not
// idempotent: each makes a new database. The first create waits for
// release, so that the test can change the object meanwhile.
type externalAPI struct {
	creates atomic.Int64
	started chan struct{}
	release chan struct{}
}

func (a *externalAPI) Create(ctx context.Context) (string, error) {
	n := a.creates.Add(1)
	if n == 1 {
		close(a.started)
		select {
		case <-a.release:
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	return fmt.Sprintf("db-%d", n), nil
}

// guardedDatabase creates the object's database through api, guarded by
// the condition DatabaseReady, unless the condition says it exists.
func guardedDatabase(api *externalAPI) *statusResource {
	return &statusResource{name: "database", create: func(ctx context.Context, _ *unstructured.Unstructured) error {
		if c, ok := conditioncontext.Get(ctx, "DatabaseReady"); ok && c.Status == metav1.ConditionTrue {
			return nil
		}
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
			id, err := api.Create(ctx)
			if err != nil {
				return "", "", "", err
			}
			return metav1.ConditionTrue, "Created", "database " + id, nil
		})
	}}
}

// TestGuardExactlyOnce: two replicas of an operator (two Frameworks, no
// leader election) reconcile the same object, whose spec, labels and status
// change while the guarded create runs. The external create runs exactly
// once; the condition records its outcome; the losers saw conflicts.
func TestGuardExactlyOnce(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	api := &externalAPI{started: make(chan struct{}), release: make(chan struct{})}
	counters := []*requestcount.Counter{requestcount.New(), requestcount.New()}
	var replicas []*runningFramework
	for i, counter := range counters {
		ops := newConfigMapOps("configmap", fmt.Sprintf("cm%d", i))
		replicas = append(replicas, startStatusFramework(t, ns,
			statusOptions{config: counter.Wrap(env.Config()), backOff: constantBackOff(20 * time.Millisecond), resync: time.Second},
			resourceSet(t, "", guardedDatabase(api), crudResource(t, ops))))
	}
	rc := widgetClient(t, ns)
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "0"}))

	select {
	case <-api.started:
	case <-time.After(60 * time.Second):
		t.Fatal("the guarded create did not start within 60s")
	}
	// While the create runs, the other replica's Guard is refused before
	// its task: the condition is locked.
	poll(t, "the other replica's Guard to be refused", func(context.Context) (bool, error) {
		for _, r := range replicas {
			for _, tr := range r.Traces(ns + "/w1") {
				if hasFrameworkStep(tr, framework.StepLockCondition, trace.OutcomeError) {
					return true, nil
				}
			}
		}
		return false, nil
	})
	// Meanwhile: three spec changes, a label, and another status writer.
	for i := 1; i <= 3; i++ {
		updateSpec(t, rc, "w1", map[string]string{"a": fmt.Sprint(i)})
	}
	w, err := rc.Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.SetLabels(map[string]string{"touched": "yes"})
	if _, err := rc.Update(t.Context(), w, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := rc.Patch(t.Context(), "w1", types.MergePatchType, []byte(`{"status":{"note":"hello"}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	close(api.release)

	s := waitStatus(t, rc, "w1", "DatabaseReady True and Ready at the last generation", func(s widgetStatus) bool {
		return s.generation == 4 && readyAt(s) && isTrue(s, "DatabaseReady")
	})
	// Both replicas reconcile the last state successfully (resyncs), after
	// which no create can be pending.
	since := time.Now()
	for _, r := range replicas {
		waitReconciled(t, r.Framework, ns+"/w1", framework.ResultSuccess, since)
	}
	waitConfigMapData(t, ns, "w1-cm0", map[string]string{"a": "3"})
	waitConfigMapData(t, ns, "w1-cm1", map[string]string{"a": "3"})
	if n := api.creates.Load(); n != 1 {
		t.Fatalf("external creates = %d, want exactly 1", n)
	}
	if c := s.condition("DatabaseReady"); c.Reason != "Created" || c.Message != "database db-1" {
		t.Errorf("DatabaseReady = %+v, want Created with database db-1", c)
	}
	var conflicts int64
	var results []string
	refused := 0
	for i, r := range replicas {
		conflicts += counters[i].Snapshot().ByCode[409]
		for _, tr := range r.Traces(ns + "/w1") {
			results = append(results, fmt.Sprintf("%d:%s", i, tr.Result))
			if hasFrameworkStep(tr, framework.StepLockCondition, trace.OutcomeError) {
				refused++
			}
		}
	}
	t.Logf("external creates: 1; Guards refused before their task: %d; 409 answers: %d; reconciliations: %v", refused, conflicts, results)
}

// TestGuardStaleReadConflicts: another writer changes the object after the
// reconciliation read it and before the Guard locks: the lock fails with 409
// before the task runs, and the retry with the latest object runs it once.
func TestGuardStaleReadConflicts(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	counter := requestcount.New()
	rc := widgetClient(t, ns)
	var creates atomic.Int64
	var once sync.Once
	writerErr := make(chan error, 1)
	db := &statusResource{name: "database", create: func(ctx context.Context, obj *unstructured.Unstructured) error {
		if c, ok := conditioncontext.Get(ctx, "DatabaseReady"); ok && c.Status == metav1.ConditionTrue {
			return nil
		}
		once.Do(func() {
			// Another writer, between the read and the lock.
			_, err := rc.Patch(ctx, obj.GetName(), types.MergePatchType, []byte(`{"metadata":{"annotations":{"other":"writer"}}}`), metav1.PatchOptions{})
			writerErr <- err
		})
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			return metav1.ConditionTrue, "Created", fmt.Sprintf("database db-%d", creates.Add(1)), nil
		})
	}}
	f := startStatusFramework(t, ns, statusOptions{config: counter.Wrap(env.Config()), backOff: constantBackOff(20 * time.Millisecond)}, resourceSet(t, "", db))
	start := counter.Snapshot()
	createWidget(t, newWidget(ns, "w1", "", nil))
	if err := <-writerErr; err != nil {
		t.Fatal(err)
	}
	s := waitStatus(t, rc, "w1", "DatabaseReady True and Ready", func(s widgetStatus) bool { return readyAt(s) && isTrue(s, "DatabaseReady") })
	if n := creates.Load(); n != 1 {
		t.Fatalf("creates = %d, want 1", n)
	}
	if c := s.condition("DatabaseReady"); c.Message != "database db-1" {
		t.Errorf("DatabaseReady = %+v, want database db-1", c)
	}
	first := f.Traces(ns + "/w1")[0]
	if first.Result != framework.ResultConflict || !hasFrameworkStep(first, framework.StepLockCondition, trace.OutcomeError) {
		t.Errorf("first reconciliation = %s %v, want a conflict at the lock", first.Result, stepNames(first))
	}
	if d := counter.Snapshot().Sub(start); d.ByCode[409] < 1 {
		t.Errorf("409 answers = %d, want the lock's: %s", d.ByCode[409], d)
	}
}

// TestGuardAfterOwnStatusWrite: a resource writes the object's status itself
// (an external ID, with a JSON merge patch of the status subresource) and
// reports the answer's resourceVersion; a Guard later in the same
// reconciliation locks under that version, not the one read: the first
// reconciliation succeeds, the task runs once, and the API server answers
// no 409.
func TestGuardAfterOwnStatusWrite(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	counter := requestcount.New()
	rc := widgetClient(t, ns)
	var creates atomic.Int64
	id := &statusResource{name: "id", create: func(ctx context.Context, obj *unstructured.Unstructured) error {
		if note, _, _ := unstructured.NestedString(obj.Object, "status", "note"); note == "r-1" {
			return nil
		}
		u, err := rc.Patch(ctx, obj.GetName(), types.MergePatchType, []byte(`{"status":{"note":"r-1"}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			return err
		}
		resourceversioncontext.SetResourceVersion(ctx, u.GetResourceVersion())
		return nil
	}}
	db := &statusResource{name: "database", create: func(ctx context.Context, _ *unstructured.Unstructured) error {
		if c, ok := conditioncontext.Get(ctx, "DatabaseReady"); ok && c.Status == metav1.ConditionTrue {
			return nil
		}
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			return metav1.ConditionTrue, "Created", fmt.Sprintf("database db-%d", creates.Add(1)), nil
		})
	}}
	f := startStatusFramework(t, ns, statusOptions{config: counter.Wrap(env.Config()), backOff: constantBackOff(20 * time.Millisecond)}, resourceSet(t, "", id, db))
	start := counter.Snapshot()
	createWidget(t, newWidget(ns, "w1", "", nil))
	waitStatus(t, rc, "w1", "DatabaseReady True and Ready", func(s widgetStatus) bool { return readyAt(s) && isTrue(s, "DatabaseReady") })
	if n := creates.Load(); n != 1 {
		t.Fatalf("creates = %d, want 1", n)
	}
	// The trace is kept after the status write: wait for it.
	poll(t, "the first reconciliation's trace", func(context.Context) (bool, error) { return len(f.Traces(ns+"/w1")) > 0, nil })
	if first := f.Traces(ns + "/w1")[0]; first.Result != framework.ResultSuccess {
		t.Errorf("first reconciliation = %s %q %v, want success", first.Result, first.Error, stepNames(first))
	}
	if d := counter.Snapshot().Sub(start); d.ByCode[409] != 0 {
		t.Errorf("409 answers = %d, want none: %s", d.ByCode[409], d)
	}
	u, err := rc.Get(t.Context(), "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if note, _, _ := unstructured.NestedString(u.Object, "status", "note"); note != "r-1" {
		t.Errorf("status.note = %q, want the resource's r-1 kept", note)
	}
}

// TestStatusWriteDoesNotHoldTheNextChange: the watch event of the status
// write often reaches the cache before the reconciliation that wrote it
// has ended; a label change right after it is reconciled at once, not held
// back as stale until the write expectation's TTL.
func TestStatusWriteDoesNotHoldTheNextChange(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	noop := &statusResource{name: "noop", create: func(context.Context, *unstructured.Unstructured) error { return nil }}
	f := startStatusFramework(t, ns, statusOptions{dropManagedFields: true}, resourceSet(t, "", noop))
	rc := widgetClient(t, ns)
	for i := range 5 {
		name := fmt.Sprintf("w%d", i)
		createWidget(t, newWidget(ns, name, "", nil))
		waitStatus(t, rc, name, "Ready", readyAt)
		since := time.Now()
		if _, err := rc.Patch(t.Context(), name, types.MergePatchType, []byte(`{"metadata":{"labels":{"changed":"yes"}}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		waitReconciled(t, f.Framework, ns+"/"+name, framework.ResultSuccess, since)
		for _, tr := range f.Traces(ns + "/" + name) {
			if tr.Result == framework.ResultStale {
				t.Errorf("%s: a reconciliation was held back as stale: the cache had shown the status write", name)
			}
		}
	}
}

// TestStatusNotWrittenToRecreatedObject: an object deleted and created again
// under its name while a reconciliation of the first one runs does not get
// the first one's outcome (Ready True at the generation it observed) from
// the end-of-chain status write: its status shows only its own
// reconciliations.
func TestStatusNotWrittenToRecreatedObject(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	rc := widgetClient(t, ns)
	entered := make(chan struct{})
	release := make(chan struct{})
	releaseNew := make(chan struct{})
	var first atomic.Pointer[types.UID]
	hold := &statusResource{name: "hold", create: func(ctx context.Context, obj *unstructured.Unstructured) error {
		if first.CompareAndSwap(nil, ptr(obj.GetUID())) {
			close(entered)
			<-release
			return nil
		}
		if obj.GetUID() != *first.Load() {
			// The new object's own reconciliation waits until the test has
			// read what the first one's left.
			select {
			case <-releaseNew:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}}
	// Without the finalizer nothing holds the first object while its chain
	// runs (a finalizer removed by hand does the same).
	f := startStatusFramework(t, ns, statusOptions{disableFinalizers: true}, resourceSet(t, "", hold))
	var closeNew sync.Once
	t.Cleanup(func() { closeNew.Do(func() { close(releaseNew) }) })
	since := time.Now()
	old := createWidget(t, newWidget(ns, "w1", "", nil))
	<-entered
	if err := rc.Delete(t.Context(), "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	recreated := createWidget(t, newWidget(ns, "w1", "", nil))
	if recreated.GetUID() == old.GetUID() {
		t.Fatal("the new object has the old one's UID")
	}
	close(release)
	// The first object's reconciliation (the new one's waits).
	tr := lastTrace(t, f.Framework, ns+"/w1", func(tr trace.Trace) bool {
		return tr.Result == framework.ResultSuccess && tr.Start.After(since) && slices.ContainsFunc(tr.Steps, func(s trace.Step) bool { return s.Resource == "hold" && s.Step == "ensure created" })
	})

	s, err := readWidgetStatus(t.Context(), rc, "w1")
	if err != nil {
		t.Fatal(err)
	}
	if s.obj.GetUID() != recreated.GetUID() {
		t.Fatalf("w1 has UID %s, want the new object's %s", s.obj.GetUID(), recreated.GetUID())
	}
	if s.observed != 0 || len(s.conditions) != 0 {
		t.Errorf("the new object, never reconciled to its end, has status.observedGeneration %d and conditions %+v, want none: the first object's reconciliation (%s) wrote its outcome to it",
			s.observed, s.conditions, stepNames(tr))
	}
	closeNew.Do(func() { close(releaseNew) })
	waitStatus(t, rc, "w1", "Ready True at its generation after its own reconciliation", readyAt)
}

// TestStatusCarriedConditionNotWrittenBack: with status.conditions a map
// list (as controller-gen declares []metav1.Condition), a condition a
// resource set in an earlier reconciliation and not in this one is carried
// over in the Framework's apply from the object as read. Another writer
// (kubectl, with force) changes it after the read: the Framework's apply,
// on an object that carries its finalizer, must not write the value read
// back over the other writer's.
func TestStatusCarriedConditionNotWrittenBack(t *testing.T) {
	t.Parallel()
	crd := backupCRD(uniqueCRDGroup(t))
	c, err := crdclient.New(crdclient.Config{Client: apiextensionsclient.NewForConfigOrDie(env.Config())})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureCreated(t.Context(), crd, nil); err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	ns := newNamespace(t)
	rc := dynamicClient(t, env.Config()).Resource(gvr).Namespace(ns)
	var later atomic.Bool
	var once sync.Once
	writerErr := make(chan error, 1)
	db := &statusResource{name: "database", create: func(ctx context.Context, obj *unstructured.Unstructured) error {
		if !later.Load() {
			conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Created", "database db-1")
			return nil
		}
		once.Do(func() {
			// Another writer, between the read and the Framework's apply.
			apply := `{"apiVersion":"` + gvr.GroupVersion().String() + `","kind":"Backup","metadata":{"name":"b1"},"status":{"conditions":[` +
				`{"type":"DatabaseReady","status":"False","reason":"DeletedByHand","message":"the database was deleted","lastTransitionTime":"2020-01-01T00:00:00Z"}]}}`
			force := true
			_, err := rc.Patch(ctx, obj.GetName(), types.ApplyPatchType, []byte(apply), metav1.PatchOptions{FieldManager: "kubectl", Force: &force}, "status")
			writerErr <- err
		})
		return errors.New("the database is gone") // Ready False: a write, DatabaseReady not set
	}}
	startStatusFramework(t, ns, statusOptions{gvr: gvr, backOff: constantBackOff(50 * time.Millisecond)}, resourceSet(t, "", db))
	b := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"secretName": "s", "schedule": "@daily"}}}
	b.SetAPIVersion(gvr.GroupVersion().String())
	b.SetKind("Backup")
	b.SetName("b1")
	if _, err := rc.Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, rc, "b1", "DatabaseReady True and Ready", func(s widgetStatus) bool { return readyAt(s) && isTrue(s, "DatabaseReady") })

	later.Store(true)
	if _, err := rc.Patch(t.Context(), "b1", types.MergePatchType, []byte(`{"spec":{"schedule":"@hourly"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := <-writerErr; err != nil {
		t.Fatal(err)
	}
	s := waitStatus(t, rc, "b1", "Ready False at generation 2", func(s widgetStatus) bool {
		c := s.condition(conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == 2
	})
	if c := s.condition("DatabaseReady"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "DeletedByHand" {
		t.Errorf("DatabaseReady = %+v after the Framework's apply, want the other writer's False DeletedByHand kept", c)
	}
}
