package integration

// The fault-injection suite: each test runs an operator over faultN widgets
// (a ConfigMap per widget), injects one fault, and checks that afterwards
// every object converged, nothing was lost or done twice, and the operator
// did not spin. docs/reliability.md lists the faults and these tests.

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/testenv"
	"github.com/operatorkit/operatorkit/trace"
)

// ownServer starts a server of the test's own (for faults that restart it),
// with the Widget CRD and a namespace, and returns the admin clients.
func ownServer(t *testing.T) (*testenv.Env, kubernetes.Interface, string) {
	t.Helper()
	own := testenv.New(t)
	installWidgetCRD(t, own.Config())
	kc := kubernetes.NewForConfigOrDie(own.Config())
	ns := dnsName(t.Name())
	createNamespace(t, kc, ns)
	return own, kc, ns
}

// restartAPIServer restarts the API server of own. When a real API server
// process stops, its connections die with it and its clients see refused
// connections until the new one listens; testenv's instead shuts down
// gracefully (ShutdownSendRetryAfter: new requests answered 429, open
// watches cut within seconds). So once it stops listening, the operator (h)
// is cut off (its watches break, its requests are refused) until the new
// server is ready, as it would be by a dying process.
func restartAPIServer(t *testing.T, own *testenv.Env, h *harness) {
	t.Helper()
	restarted := make(chan error, 1)
	go func() { restarted <- own.RestartAPIServer(context.WithoutCancel(t.Context())) }()
	host := strings.TrimPrefix(own.Config().Host, "https://")
	poll(t, "the API server to stop listening", func(context.Context) (bool, error) {
		c, err := net.DialTimeout("tcp", host, time.Second)
		if err != nil {
			return true, nil
		}
		c.Close()
		return false, nil
	})
	cutOff := h.net.partitioned.Load()
	h.net.partition()
	err := <-restarted
	if !cutOff {
		h.net.heal()
	}
	if err != nil {
		t.Fatalf("restart API server: %v", err)
	}
}

// TestFaultAPIServerRestartMidBurst: the kube-apiserver restarts while a
// burst of creates is under way. Creates the server refused are retried by
// the user; the operator's in-flight requests fail, its watch breaks and is
// re-established. Afterwards every widget converges, with exactly one
// finalizer and at most one accepted ConfigMap create each, a later spec
// change of every widget still arrives, and the operator is quiet.
func TestFaultAPIServerRestartMidBurst(t *testing.T) {
	t.Parallel() // restarts a server of its own
	own, kc, ns := ownServer(t)
	wc := dynamicClient(t, own.Config()).Resource(widgetGVR).Namespace(ns)
	h := newHarness(t, own.Config(), ns)
	ops := newFaultOps(h.kube)
	op := h.start(opOptions{}, faultSet(t, crudResource(t, ops)))

	half := make(chan struct{})
	burst := make(chan error, 1)
	go func() {
		for i := range faultN {
			if i == faultN/2 {
				close(half)
			}
			// The server may be down: retry until the create is accepted
			// (AlreadyExists: an earlier try was accepted but its answer lost).
			err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
				_, err := wc.Create(ctx, newWidget(ns, widgetName(i), "", widgetData(i, 0)), metav1.CreateOptions{})
				return err == nil || apierrors.IsAlreadyExists(err), nil
			})
			if err != nil {
				burst <- fmt.Errorf("create %s: %w", widgetName(i), err)
				return
			}
		}
		burst <- nil
	}()
	<-half
	start := time.Now()
	restartAPIServer(t, own, h)
	t.Logf("API server restarted in %s, mid-burst", time.Since(start).Round(time.Millisecond))
	if err := <-burst; err != nil {
		t.Fatal(err)
	}
	all := names(0, faultN)
	waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)

	// The re-established watch delivers later changes.
	for i := range faultN {
		if err := setWidgetData(t.Context(), wc, widgetName(i), widgetData(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)

	// faultOps counts a change when its answer reaches the operator, which
	// can be after the server's state converged: count once it is quiet.
	assertQuiet(t, op, h, time.Second)
	created, updated, _ := ops.counts()
	assertAtMostOnce(t, "accepted configmap creates", created, all)
	assertOnce(t, "accepted configmap updates", updated, all)
	s := h.requests.Snapshot()
	t.Logf("operator: %d reconciliations (%d failed), requests %s, relists %d, 410s %d",
		op.reconciles(t, ""), op.reconciles(t, framework.ResultError), s, h.net.relists.Load(), h.net.expired.Load())
	// Bounded work: one reconciliation per create and per update, plus the
	// retries of those in flight during the restart (backoff-limited).
	if n := op.reconciles(t, ""); n > 4*faultN {
		t.Errorf("%d reconciliations for %d widgets with 2 changes each, want at most %d", n, faultN, 4*faultN)
	}
	if s.Writes > 5*faultN {
		t.Errorf("%d writes for %d widgets (finalizer, create, update each), want at most %d", s.Writes, faultN, 5*faultN)
	}
}

// TestFaultWatchExpiredRelist: the operator is cut off the API server (its
// watch breaks, its requests fail) while widgets change, are deleted and are
// created; the API server restarts meanwhile, so its new watch cache holds no
// history older than the restart and the operator's watch from its last
// resourceVersion is answered 410 Gone. The informer relists and nothing is
// missed: every change, delete and create is acted on exactly once, and
// untouched widgets are not touched.
func TestFaultWatchExpiredRelist(t *testing.T) {
	t.Parallel() // restarts a server of its own
	own, kc, ns := ownServer(t)
	wc := dynamicClient(t, own.Config()).Resource(widgetGVR).Namespace(ns)
	h := newHarness(t, own.Config(), ns)
	ops := newFaultOps(h.kube)
	op := h.start(opOptions{}, faultSet(t, crudResource(t, ops)))
	createWidgets(t, wc, ns, 0, faultN)
	waitConverged(t, kc, wc, ns, op.Finalizer(), names(0, faultN), nil)

	relists, expired := h.net.relists.Load(), h.net.expired.Load()
	h.net.partition()
	// Unseen by the operator: 20 spec changes, 10 deletes, 10 creates.
	for i := range 20 {
		if err := setWidgetData(t.Context(), wc, widgetName(i), widgetData(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	for _, name := range names(20, 30) {
		if err := wc.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createWidgets(t, wc, ns, faultN, faultN+10)
	restartAPIServer(t, own, h)
	for i := 30; i < 35; i++ {
		if err := setWidgetData(t.Context(), wc, widgetName(i), widgetData(i, 2)); err != nil {
			t.Fatal(err)
		}
	}
	h.net.heal()

	live := append(names(0, 20), names(30, faultN+10)...)
	waitConverged(t, kc, wc, ns, op.Finalizer(), live, names(20, 30))
	if got := h.net.expired.Load() - expired; got == 0 {
		t.Errorf("the operator's watch was never answered 410 Gone; the relist path was not exercised")
	}
	if got := h.net.relists.Load() - relists; got == 0 {
		t.Errorf("the informer did not relist after its watch expired")
	}
	assertQuiet(t, op, h, time.Second) // first: see TestFaultAPIServerRestartMidBurst
	created, updated, deleted := ops.counts()
	assertOnce(t, "accepted configmap creates", created, names(0, faultN+10))
	assertOnce(t, "accepted configmap updates", updated, append(names(0, 20), names(30, 35)...))
	assertNone(t, "configmap updates of untouched widgets", updated, append(names(35, faultN+10), names(20, 30)...))
	assertOnce(t, "accepted configmap deletes", deleted, names(20, 30))
	t.Logf("410 Gone answers %d, relists %d, reconciliations %d, requests %s",
		h.net.expired.Load()-expired, h.net.relists.Load()-relists, op.reconciles(t, ""), h.requests.Snapshot())
}

// TestFaultConcurrentWriter: another writer changes the widgets (spec and
// labels) and their ConfigMaps while the operator works. First, the writer
// changes each ConfigMap inside the operator's read-modify-write window, so
// every first update conflicts (409) and is retried with fresh state. Then a
// free-running writer changes specs, labels and ConfigMaps at random. In the
// end every ConfigMap holds its widget's spec (desired state wins over the
// drift), every widget holds the writer's last spec and labels (the
// operator's finalizer patches never overwrote them), the lost races are
// results "conflict", not failures (no ReconcileFailed event), and nothing
// spins.
func TestFaultConcurrentWriter(t *testing.T) {
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kc, wc := kubeClient(t), widgetClient(t, ns)
	h := newHarness(t, nil, ns)
	ops := newFaultOps(h.kube)
	var raced sync.Map
	var racedN atomic.Int64
	ops.beforeUpdate = func(ctx context.Context, widget string, current *corev1.ConfigMap) {
		if _, done := raced.LoadOrStore(widget, true); done {
			return
		}
		c := current.DeepCopy()
		c.Data = map[string]string{"intruder": widget}
		if _, err := kc.CoreV1().ConfigMaps(ns).Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Errorf("racing write of %s: %v", c.Name, err)
			return
		}
		racedN.Add(1)
	}
	op := h.start(opOptions{childWatch: true, backOff: testBackOff(20*time.Millisecond, time.Second)}, faultSet(t, crudResource(t, ops)))
	all := names(0, faultN)
	createWidgets(t, wc, ns, 0, faultN)
	waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)

	before := h.requests.Snapshot()
	for i := range faultN {
		if err := setWidgetData(t.Context(), wc, widgetName(i), widgetData(i, 1)); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)
	if got := h.requests.Snapshot().Sub(before).ByCode[409]; got < racedN.Load() || racedN.Load() != faultN {
		t.Errorf("conflicts = %d after %d racing writes, want %d (one per widget)", got, racedN.Load(), faultN)
	}
	// A lost race is not a failure: result "conflict", retried, no Warning.
	if got := op.reconciles(t, framework.ResultConflict); int64(got) < racedN.Load() {
		t.Errorf("reconciliations_total{result=conflict} = %d, want at least %d", got, racedN.Load())
	}

	// The free-running writer: a fixed number of random changes.
	const changes = 200
	last := make([]map[string]string, faultN) // last spec written per widget
	lastLabel := make([]string, faultN)
	var wg sync.WaitGroup
	wg.Go(func() {
		for k := range changes / 2 {
			i := rand.IntN(faultN)
			data := widgetData(i, 2+k)
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				w, err := wc.Get(t.Context(), widgetName(i), metav1.GetOptions{})
				if err != nil {
					return err
				}
				unstructured.SetNestedStringMap(w.Object, data, "spec", "data")
				labels := w.GetLabels()
				if labels == nil {
					labels = map[string]string{}
				}
				labels["writer"] = fmt.Sprint(k)
				w.SetLabels(labels)
				_, err = wc.Update(t.Context(), w, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Errorf("writer: widget %d: %v", i, err)
				return
			}
			last[i], lastLabel[i] = data, fmt.Sprint(k)
		}
	})
	wg.Go(func() {
		for k := range changes / 2 {
			name := cmName(widgetName(rand.IntN(faultN)))
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cm, err := kc.CoreV1().ConfigMaps(ns).Get(t.Context(), name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				cm.Data = map[string]string{"drift": fmt.Sprint(k)}
				_, err = kc.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
				return err
			})
			if err != nil {
				t.Errorf("writer: configmap %s: %v", name, err)
				return
			}
		}
	})
	wg.Wait()
	s := waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)
	for i, want := range last {
		if want == nil {
			continue
		}
		w := s.widgets[widgetName(i)]
		got, _, _ := unstructured.NestedStringMap(w.Object, "spec", "data")
		if !maps.Equal(got, want) || w.GetLabels()["writer"] != lastLabel[i] {
			t.Errorf("widget %s: spec %v labels %v, want the writer's last spec %v and label writer=%s", w.GetName(), got, w.GetLabels(), want, lastLabel[i])
		}
	}
	created, _, _ := ops.counts()
	assertOnce(t, "accepted configmap creates", created, all)
	assertQuiet(t, op, h, time.Second)
	if evs, err := kc.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "reason=ReconcileFailed"}); err != nil || len(evs.Items) > 0 {
		t.Errorf("conflicts reported as failures: %d ReconcileFailed events (%v)", len(evs.Items), err)
	}
	// Bounded work: each outside change (create, spec change, racing or
	// drifting write) costs a few reconciliations: its own, the echo of
	// the operator's repair through the child watch, a conflict's retry.
	if outside, n := 3*faultN+changes, op.reconciles(t, ""); n > 4*outside {
		t.Errorf("%d reconciliations for %d outside changes, want at most %d", n, outside, 4*outside)
	}
	t.Logf("conflicts %d, reconciliations %d, requests %s", h.requests.Snapshot().ByCode[409], op.reconciles(t, ""), h.requests.Snapshot())
}

// TestFaultPanicRecovered: a resource panics for one widget in five. The
// panics are recovered, counted (operatorkit_framework_panics_total and
// reconciliations_total{result="panic"}, each exactly once per panic),
// reported as a Warning event, and retried with growing backoff; the other
// widgets converge meanwhile; once the resource stops panicking the rest
// converge too.
func TestFaultPanicRecovered(t *testing.T) {
	// Under the load of the parallel tests the watch echo of the first
	// reconciliation's finalizer write can come after the first retry: the
	// retry is then held back as stale, which keeps the object's backoff,
	// so the gaps checked below hold.
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kc, wc := kubeClient(t), widgetClient(t, ns)
	h := newHarness(t, nil, ns)
	ops := newFaultOps(h.kube)
	var panicking atomic.Bool
	var panics atomic.Int64
	panicking.Store(true)
	bad := func(name string) bool { return slices.Contains(badNames(5), name) }
	panicker := newHookResource("panicker", func(_ context.Context, w *unstructured.Unstructured) error {
		if panicking.Load() && bad(w.GetName()) {
			panics.Add(1)
			panic("injected panic for " + w.GetName())
		}
		return nil
	})
	const initial, max = 100 * time.Millisecond, 1600 * time.Millisecond
	op := h.start(opOptions{backOff: testBackOff(initial, max)}, faultSet(t, panicker, crudResource(t, ops)))
	phase := time.Now()
	createWidgets(t, wc, ns, 0, faultN)
	good := slices.DeleteFunc(names(0, faultN), bad)
	waitConverged(t, kc, wc, ns, op.Finalizer(), good, nil)
	// Let every bad widget fail four times, then check the backoff.
	poll(t, "four attempts of every panicking widget", func(context.Context) (bool, error) {
		for _, name := range badNames(5) {
			if len(panicker.attemptsOf(name)) < 4 {
				return false, nil
			}
		}
		return true, nil
	})
	panicking.Store(false)
	d := time.Since(phase)
	for _, name := range badNames(5) {
		att := panicker.attemptsOf(name)
		for i, g := range gaps(att)[:3] {
			if want := initial << i; g < want {
				t.Errorf("%s: retry %d after %s, want at least %s (first gaps %v)", name, i+1, g, want, gaps(att)[:3])
			}
		}
		if n, bound := len(att), maxAttempts(d, initial, max); n > bound {
			t.Errorf("%s: %d attempts in %s, want at most %d with backoff", name, n, d, bound)
		}
	}
	waitConverged(t, kc, wc, ns, op.Finalizer(), names(0, faultN), nil)

	p := panics.Load()
	if got := metricSum(t, op.reg, "operatorkit_framework_panics_total", nil); int64(got) != p {
		t.Errorf("operatorkit_framework_panics_total = %v, want %d (one per panic)", got, p)
	}
	if got := op.reconciles(t, framework.ResultPanic); int64(got) != p {
		t.Errorf("reconciliations_total{result=panic} = %d, want %d", got, p)
	}
	if got := metricSum(t, op.reg, "operatorkit_framework_errors_total", map[string]string{"resource": "panicker"}); int64(got) != p {
		t.Errorf("errors_total{resource=panicker} = %v, want %d", got, p)
	}
	tr := lastTrace(t, op.Framework, ns+"/"+badNames(5)[0], func(tr trace.Trace) bool { return tr.Result == framework.ResultPanic })
	if !strings.Contains(tr.Error, "injected panic") {
		t.Errorf("panic trace error = %q, want the panic value", tr.Error)
	}
	poll(t, "a ReconcilePanicked event", func(ctx context.Context) (bool, error) {
		ev, err := events(ctx, kc, ns, badNames(5)[0], "ReconcilePanicked")
		return len(ev) > 0 && ev[0].Type == corev1.EventTypeWarning, err
	})
	assertQuiet(t, op, h, time.Second) // first: see TestFaultAPIServerRestartMidBurst
	created, _, _ := ops.counts()
	assertOnce(t, "accepted configmap creates", created, names(0, faultN))
	t.Logf("%d panics recovered, %d reconciliations, requests %s", p, op.reconciles(t, ""), h.requests.Snapshot())
}

// badNames returns the names of the widgets that misbehave: one in every.
func badNames(every int) []string {
	var out []string
	for i := 0; i < faultN; i += every {
		out = append(out, widgetName(i))
	}
	return out
}

// maxAttempts is how many attempts fit in d with a backoff starting at
// initial, doubling, capped at max, plus one for scheduling slack.
func maxAttempts(d, initial, max time.Duration) int {
	n, sum, next := 1, time.Duration(0), initial
	for sum+next <= d {
		sum += next
		n++
		next = min(2*next, max)
	}
	return n + 1
}

// TestFaultHangingResourceTimedOut: a resource hangs on a dependency that
// never answers (an HTTP server that holds every request) for one widget in
// ten. Config.ReconcileTimeout ends each hung reconciliation, which is
// counted as an error with "context deadline exceeded" and retried with
// backoff; with more hung widgets than workers the workers are still free:
// the other widgets converge and a widget created during the hangs converges
// promptly.
func TestFaultHangingResourceTimedOut(t *testing.T) {
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kc, wc := kubeClient(t), widgetClient(t, ns)
	// The tarpit holds every request until the client gives up, or until the
	// test ends (so that a failing test does not hang in its cleanup).
	release := make(chan struct{})
	tarpit := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	defer tarpit.Close()
	defer close(release)
	var hanging atomic.Bool
	var hung atomic.Int64
	hanging.Store(true)
	bad := func(name string) bool { return slices.Contains(badNames(10), name) }
	hc := tarpit.Client()
	slow := newHookResource("slowdependency", func(ctx context.Context, w *unstructured.Unstructured) error {
		if !hanging.Load() || !bad(w.GetName()) {
			return nil
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, tarpit.URL, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			hung.Add(1)
			return fmt.Errorf("call slow dependency: %w", err)
		}
		resp.Body.Close()
		return nil
	})
	const workers, timeout, maxBackOff = 2, time.Second, 4 * time.Second
	h := newHarness(t, nil, ns)
	ops := newFaultOps(h.kube)
	op := h.start(opOptions{workers: workers, reconcileTimeout: timeout, backOff: testBackOff(250*time.Millisecond, maxBackOff)},
		faultSet(t, slow, crudResource(t, ops)))
	createWidgets(t, wc, ns, 0, faultN)
	good := slices.DeleteFunc(names(0, faultN), bad)
	waitConverged(t, kc, wc, ns, op.Finalizer(), good, nil)
	poll(t, "more hung reconciliations than workers", func(context.Context) (bool, error) {
		return hung.Load() >= 2*workers, nil
	})

	// Workers are not exhausted: a new widget converges while the hangs go
	// on (were they exhausted, it would not converge at all: the hangs have
	// no end). Each of its reconciliations may wait in the queue behind
	// every hanging widget, each holding a worker for the timeout (5
	// widgets on 2 workers: 3 rounds of 1 s), and behind their retries
	// (backoff up to maxBackOff); the bound adds 8 s for the writes on a
	// loaded 2-core machine (a cold CI run, compiling beside this test,
	// took 9.7 s against an earlier bound of 8 s).
	start := time.Now()
	createWidgets(t, wc, ns, faultN, faultN+1)
	waitConverged(t, kc, wc, ns, op.Finalizer(), names(faultN, faultN+1), nil)
	rounds := (len(badNames(10)) + workers - 1) / workers
	bound := time.Duration(rounds)*timeout + maxBackOff + 8*time.Second
	if d := time.Since(start); d > bound {
		t.Errorf("a new widget took %s to converge during the hangs, want less than %s", d, bound)
	}
	for _, name := range badNames(10) {
		tr := lastTrace(t, op.Framework, ns+"/"+name, func(tr trace.Trace) bool { return tr.Result == framework.ResultError })
		if !strings.Contains(tr.Error, context.DeadlineExceeded.Error()) {
			t.Errorf("%s: error %q, want %q", name, tr.Error, context.DeadlineExceeded)
		}
		if tr.Duration < timeout || tr.Duration > timeout+2*time.Second {
			t.Errorf("%s: hung reconciliation took %s, want about the timeout %s", name, tr.Duration, timeout)
		}
	}
	hanging.Store(false)
	waitConverged(t, kc, wc, ns, op.Finalizer(), names(0, faultN+1), nil)

	n := hung.Load()
	if got := metricSum(t, op.reg, "operatorkit_framework_errors_total", map[string]string{"resource": "slowdependency"}); int64(got) != n {
		t.Errorf("errors_total{resource=slowdependency} = %v, want %d (one per timed-out reconciliation)", got, n)
	}
	if got := op.reconciles(t, framework.ResultError); int64(got) < n {
		t.Errorf("reconciliations_total{result=error} = %d, want at least %d", got, n)
	}
	created, _, _ := ops.counts()
	assertAtMostOnce(t, "accepted configmap creates", created, names(0, faultN+1))
	// A hung widget's retry that its backoff (up to maxBackOff) scheduled
	// before an event had it converge still runs, once, with nothing to do.
	assertQuietAfter(t, op, h, maxBackOff+time.Second, time.Second)
	t.Logf("%d reconciliations timed out after %s with %d workers; %d reconciliations in all", n, timeout, workers, op.reconciles(t, ""))
}

// TestFaultDeletedWhileDown: every widget is deleted while the operator is
// stopped. They stay (our finalizer) until the next operator starts, which
// runs each delete chain exactly once and lets them go.
func TestFaultDeletedWhileDown(t *testing.T) {
	// Not parallel: its leak check looks at every goroutine of the process.
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kc, wc := kubeClient(t), widgetClient(t, ns)
	h := newHarness(t, nil, ns)
	op := h.start(opOptions{}, faultSet(t, crudResource(t, newFaultOps(h.kube))))
	all := names(0, faultN)
	createWidgets(t, wc, ns, 0, faultN)
	waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)
	op.stop()

	for _, name := range all {
		if err := wc.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	s, err := readState(t.Context(), kc, wc, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range all {
		if w := s.widgets[name]; w == nil || w.GetDeletionTimestamp() == nil || s.cms[name] == nil {
			t.Fatalf("%s while the operator is down: want the widget terminating and its configmap present", name)
		}
	}

	checkLeaks := testenv.LeakCheck(t)
	ops := newFaultOps(h.kube)
	op = h.start(opOptions{}, faultSet(t, crudResource(t, ops)))
	waitConverged(t, kc, wc, ns, op.Finalizer(), nil, all)
	_, _, deleted := ops.counts()
	assertOnce(t, "accepted configmap deletes", deleted, all)
	assertQuiet(t, op, h, time.Second)
	op.stop()
	checkLeaks()
}

// TestFaultUnroutableDeletionKeepsFinalizer: widgets handled by release "1"
// are deleted while only release "2" runs. No resource set handles them, so
// the framework keeps its finalizer (their ConfigMaps are not leaked), says
// why (trace result no_resource_set, Warning event NoResourceSet), and does
// not retry them hot. Deploying a release that handles them lets the deletes
// finish, exactly once each, without touching the others.
func TestFaultUnroutableDeletionKeepsFinalizer(t *testing.T) {
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kc, wc := kubeClient(t), widgetClient(t, ns)
	h := newHarness(t, nil, ns)
	op := h.start(opOptions{}, resourceSet(t, "1", crudResource(t, newFaultOps(h.kube))))
	all := names(0, faultN)
	for i := range faultN {
		if _, err := wc.Create(t.Context(), newWidget(ns, widgetName(i), "1", widgetData(i, 0)), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, kc, wc, ns, op.Finalizer(), all, nil)
	op.stop()

	op = h.start(opOptions{}, resourceSet(t, "2", crudResource(t, newFaultOps(h.kube))))
	// At boot every widget is reconciled once and found unroutable.
	poll(t, "one no_resource_set reconciliation per widget", func(context.Context) (bool, error) {
		return op.reconciles(t, framework.ResultNoResourceSet) == faultN, nil
	})
	deleting := names(0, 10)
	for _, name := range deleting {
		if err := wc.Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Each delete is one more no_resource_set reconciliation, and no more.
	poll(t, "one no_resource_set reconciliation per delete", func(context.Context) (bool, error) {
		return op.reconciles(t, framework.ResultNoResourceSet) == faultN+len(deleting), nil
	})
	for _, name := range deleting {
		poll(t, "a NoResourceSet event for "+name, func(ctx context.Context) (bool, error) {
			ev, err := events(ctx, kc, ns, name, "NoResourceSet")
			if err != nil || len(ev) == 0 {
				return false, err
			}
			if !strings.Contains(ev[0].Message, "no resource set") || ev[0].Type != corev1.EventTypeWarning {
				t.Errorf("event %s %q, want a Warning saying no resource set handles it", ev[0].Type, ev[0].Message)
			}
			return true, nil
		})
		if trs := op.Traces(ns + "/" + name); len(trs) == 0 || trs[len(trs)-1].Result != framework.ResultNoResourceSet {
			t.Errorf("%s: last trace %+v, want result %s", name, trs, framework.ResultNoResourceSet)
		}
	}
	assertQuiet(t, op, h, time.Second)
	s, err := readState(t.Context(), kc, wc, ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range deleting {
		w := s.widgets[name]
		if w == nil || w.GetDeletionTimestamp() == nil || !slices.Contains(w.GetFinalizers(), op.Finalizer()) || s.cms[name] == nil {
			t.Errorf("%s: want it terminating with finalizer %s and its configmap kept; widget %v configmap %v", name, op.Finalizer(), w != nil, s.cms[name] != nil)
		}
		// Not retried hot: one reconciliation at boot, one for the delete.
		if n := trace.Reconciliations(op.Traces(ns + "/" + name)); n > 2 {
			t.Errorf("%s: %d reconciliations while unroutable, want at most 2", name, n)
		}
	}
	if n := op.reconciles(t, ""); n > faultN+len(deleting) {
		t.Errorf("%d reconciliations of unroutable widgets, want at most %d (boot + one per delete)", n, faultN+len(deleting))
	}
	if w := h.events.Snapshot().Writes; w > 2*int64(faultN+len(deleting)) {
		t.Errorf("%d event writes for %d unroutable reconciliations, want at most 2 each", w, faultN+len(deleting))
	}
	op.stop()

	ops := newFaultOps(h.kube)
	op = h.start(opOptions{}, resourceSet(t, "1", crudResource(t, ops)), resourceSet(t, "2", crudResource(t, newFaultOps(h.kube))))
	waitConverged(t, kc, wc, ns, op.Finalizer(), names(10, faultN), deleting)
	created, updated, deleted := ops.counts()
	assertOnce(t, "accepted configmap deletes", deleted, deleting)
	assertNone(t, "configmap creates", created, all)
	assertNone(t, "configmap updates", updated, all)
	assertQuiet(t, op, h, time.Second)
}

// TestSecurityLogsNoSecretData: an operator whose chain reads a Secret, logs
// at debug level, fails once per widget and panics once, never logs the
// Secret's value (plain or base64) nor a whole object (the widgets' spec).
func TestSecurityLogsNoSecretData(t *testing.T) {
	t.Parallel() // checks the logs of its own logger only
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kc, wc := kubeClient(t), widgetClient(t, ns)
	secretValue := fmt.Sprintf("s3cr3t-%d", rand.Int64())
	specMarker := fmt.Sprintf("spec-marker-%d", rand.Int64())
	if _, err := kc.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"password": []byte(secretValue)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var buf syncBuffer
	logger := log.NewLogfmtLogger(&buf) // every level, debug included
	h := newHarness(t, nil, ns)
	var mu sync.Mutex
	failed := map[string]bool{}
	var panicked atomic.Bool
	reader := newHookResource("secretreader", func(ctx context.Context, w *unstructured.Unstructured) error {
		s, err := h.kube.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if len(s.Data["password"]) == 0 {
			return errors.New("empty password")
		}
		if panicked.CompareAndSwap(false, true) {
			panic("injected panic while holding a credential")
		}
		mu.Lock()
		defer mu.Unlock()
		if !failed[w.GetName()] {
			failed[w.GetName()] = true
			return errInjected
		}
		return nil
	})
	op := h.start(opOptions{logger: logger, backOff: testBackOff(20*time.Millisecond, time.Second)}, faultSet(t, reader, crudResource(t, newFaultOps(h.kube))))
	for i := range 5 {
		if _, err := wc.Create(t.Context(), newWidget(ns, widgetName(i), "", map[string]string{"marker": specMarker}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitConverged(t, kc, wc, ns, op.Finalizer(), names(0, 5), nil)
	op.stop()

	logs := buf.String()
	for _, want := range []string{"level=debug", "reconciliation failed", "reconciliation panicked"} {
		if !strings.Contains(logs, want) {
			t.Fatalf("logs lack %q; the test did not exercise debug, error and panic logging:\n%s", want, logs)
		}
	}
	for what, secret := range map[string]string{
		"the secret's value":           secretValue,
		"the secret's value in base64": base64.StdEncoding.EncodeToString([]byte(secretValue)),
		"a widget's spec":              specMarker,
	} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %s", what)
		}
	}
	t.Logf("%d bytes of logs checked", len(logs))
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// assertAtMostOnce is assertOnce where an accepted change whose answer was
// lost (a restart, a timeout) is not seen by the operator: at most one per
// widget, the server's state (checked by waitConverged) says the rest.
func assertAtMostOnce(t *testing.T, what string, counts map[string]int, names []string) {
	t.Helper()
	var bad []string
	for _, n := range names {
		if counts[n] > 1 {
			bad = append(bad, fmt.Sprintf("%s=%d", n, counts[n]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: want at most 1 per widget, got %s", what, strings.Join(bad, " "))
	}
}

// assertNone fails when a widget of names had an accepted change in counts.
func assertNone(t *testing.T, what string, counts map[string]int, names []string) {
	t.Helper()
	var bad []string
	for _, n := range names {
		if counts[n] != 0 {
			bad = append(bad, fmt.Sprintf("%s=%d", n, counts[n]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: want none, got %s", what, strings.Join(bad, " "))
	}
}

// TestFaultDocListsEveryTest keeps docs/reliability.md true: every fault
// and security test of this package and of example/reliability is in its
// table, and every test the table names exists.
func TestFaultDocListsEveryTest(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile("../docs/reliability.md")
	if err != nil {
		t.Fatal(err)
	}
	inDoc := map[string]bool{}
	for _, m := range regexp.MustCompile("`(Test[A-Za-z0-9_]+)`").FindAllStringSubmatch(string(doc), -1) {
		inDoc[m[1]] = true
	}
	inCode := map[string]string{}
	for _, pattern := range []string{"fault*_test.go", "../example/reliability/*_test.go"} {
		files, err := filepath.Glob(pattern)
		if err != nil || len(files) == 0 {
			t.Fatalf("no test files match %s (%v)", pattern, err)
		}
		for _, file := range files {
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range regexp.MustCompile(`(?m)^func (Test[A-Za-z0-9_]+)\(t \*testing\.T\)`).FindAllStringSubmatch(string(src), -1) {
				inCode[m[1]] = file
			}
		}
	}
	for name, file := range inCode {
		if !inDoc[name] {
			t.Errorf("%s (%s) is missing from docs/reliability.md", name, file)
		}
	}
	for name := range inDoc {
		if _, ok := inCode[name]; !ok {
			t.Errorf("docs/reliability.md names %s, which does not exist", name)
		}
	}
}
