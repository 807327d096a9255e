package integration

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/testenv"
)

var (
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgetKind   = schema.GroupKind{Group: widgetGVR.Group, Kind: "Widget"}
)

// ownedConfigMapOps is configMapOps whose ConfigMaps have their widget as
// controller owner, with every create announced to the operator's OwnWrites
// and every reconciliation counted.
type ownedConfigMapOps struct {
	*configMapOps
	writes *operatorpkg.OwnWrites

	mu    sync.Mutex
	calls map[string]int // GetCurrentState calls by widget name
}

func newOwnedConfigMapOps(suffix string, writes *operatorpkg.OwnWrites) *ownedConfigMapOps {
	return &ownedConfigMapOps{configMapOps: newConfigMapOps("configmap-"+suffix, suffix), writes: writes, calls: map[string]int{}}
}

func (o *ownedConfigMapOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	o.mu.Lock()
	o.calls[obj.(*unstructured.Unstructured).GetName()]++
	o.mu.Unlock()
	return o.configMapOps.GetCurrentState(ctx, obj)
}

func (o *ownedConfigMapOps) reconciles(name string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[name]
}

func (o *ownedConfigMapOps) GetDesiredState(ctx context.Context, obj any) (any, error) {
	d, err := o.configMapOps.GetDesiredState(ctx, obj)
	if err != nil {
		return nil, err
	}
	w := obj.(*unstructured.Unstructured)
	cm := d.(*corev1.ConfigMap)
	cm.OwnerReferences = []metav1.OwnerReference{{
		APIVersion: w.GetAPIVersion(), Kind: w.GetKind(), Name: w.GetName(), UID: w.GetUID(),
		Controller: ptr(true),
	}}
	return cm, nil
}

func (o *ownedConfigMapOps) ApplyCreateChange(ctx context.Context, obj, change any) error {
	cm := change.(*corev1.ConfigMap)
	done := o.writes.Begin(configMapGVR.GroupResource(), cm.Namespace, cm.Name)
	got, err := o.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{})
	done(got, err)
	return err
}

// operatorFramework builds a Framework named name over the widgets of ns,
// on op's shared informer, with one resource.
func operatorFramework(t *testing.T, op *operatorpkg.Operator, ns, name string, ops *ownedConfigMapOps) *framework.Framework {
	t.Helper()
	return operatorFrameworkOn(t, op, informer.Config{GVR: widgetGVR, Namespace: ns}, name, ops)
}

// operatorFrameworkOn is operatorFramework over the widgets that op's
// informer for cfg shows.
func operatorFrameworkOn(t *testing.T, op *operatorpkg.Operator, cfg informer.Config, name string, ops *ownedConfigMapOps) *framework.Framework {
	t.Helper()
	ensureWidgetCRD(t)
	inf, err := op.Informer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", crudResource(t, ops))}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{
		Name:           name,
		Informer:       inf,
		ResourceRouter: rt,
		Client:         op.Dynamic(),
		Resource:       widgetGVR,
		Registerer:     op.Registry(),
		Workers:        2,
	})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// runOperator runs op.Run in the background; stop cancels it and returns
// Run's error (once; later calls return the same). done delivers Run's error
// to a test that waits for Run to end by itself; stop does not depend on it,
// so that a test that received from done does not make stop wait in vain.
func runOperator(op *operatorpkg.Operator) (stop func() error, done <-chan error) {
	ctx, cancel := context.WithCancel(context.Background())
	ch := make(chan error, 1)
	returned := make(chan struct{})
	var runErr error
	go func() {
		runErr = op.Run(ctx)
		close(returned)
		ch <- runErr
	}()
	var once sync.Once
	var err error
	return func() error {
		once.Do(func() {
			cancel()
			select {
			case <-returned:
				err = runErr
			case <-time.After(60 * time.Second):
				err = errors.New("Run did not return within 60 s of its context ending")
			}
		})
		return err
	}, ch
}

func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestOperatorRun runs two Frameworks over the same widgets and a child
// watch in one Operator: one informer per kind, children wake their owner
// but the operator's own writes do not, the HTTP endpoints answer, and Run
// stops cleanly with no goroutine left behind.
func TestOperatorRun(t *testing.T) {
	// Not parallel: its leak check looks at every goroutine of the process.
	// Serial tests run before the parallel ones start, so none is running.
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	checkLeaks := testenv.LeakCheck(t)

	counter := requestcount.New()
	op, err := operatorpkg.New(operatorpkg.Config{
		RESTConfig:     counter.Wrap(env.Config()),
		Name:           "op-run",
		MetricsAddress: "127.0.0.1:0",
		Logger:         log.NewNopLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	opsA := newOwnedConfigMapOps("a", op.OwnWrites())
	opsB := newOwnedConfigMapOps("b", op.OwnWrites())
	fA := operatorFramework(t, op, ns, "widgets-a", opsA)
	fB := operatorFramework(t, op, ns, "widgets-b", opsB)
	for _, f := range []*framework.Framework{fA, fB} {
		if err := op.Add(f); err != nil {
			t.Fatal(err)
		}
	}
	configMaps, err := op.Informer(informer.Config{GVR: configMapGVR, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Owns(fA, widgetKind, configMaps); err != nil {
		t.Fatal(err)
	}
	const n = 5
	for i := range n {
		createWidget(t, newWidget(ns, fmt.Sprintf("w%d", i), "", map[string]string{"k": "v"}))
	}
	events := op.EventRecorder(clientgoscheme.Scheme)

	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	for _, f := range []*framework.Framework{fA, fB} {
		awaitBoot(t, f, done, func() {}) // on failure, the cleanup stops Run
	}
	kc := kubeClient(t)
	poll(t, "every widget's two ConfigMaps", func(ctx context.Context) (bool, error) {
		list, err := kc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(list.Items) >= 2*n, nil
	})

	t.Run("one informer per kind", func(t *testing.T) {
		// Widgets (shared by both Frameworks) and ConfigMaps: two lists,
		// where an informer per Framework and per watch would make three.
		snap := counter.Snapshot()
		if got := snap.ByVerb["list"] + snap.ByVerb["watch"]; got != 2 {
			t.Errorf("list and watch requests = %d (%v), want 2 (one per shared informer)", got, snap.ByVerb)
		}
	})

	t.Run("own writes do not wake the owner", func(t *testing.T) {
		// Each widget was reconciled once by A; its ConfigMap create was
		// recorded, so the create's watch event enqueued nothing. Watch a
		// window in which an extra reconciliation would show.
		err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 2*time.Second, true, func(context.Context) (bool, error) {
			for i := range n {
				if opsA.reconciles(fmt.Sprintf("w%d", i)) > 1 {
					return true, nil
				}
			}
			return false, nil
		})
		if err == nil {
			for i := range n {
				t.Logf("w%d: %d reconciliations by A", i, opsA.reconciles(fmt.Sprintf("w%d", i)))
			}
			t.Fatal("a widget was reconciled again after its own ConfigMap create")
		}
	})

	t.Run("a deleted child wakes its owner", func(t *testing.T) {
		before := opsA.reconciles("w0")
		if err := kc.CoreV1().ConfigMaps(ns).Delete(t.Context(), "w0-a", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		poll(t, "w0-a to be created again", func(ctx context.Context) (bool, error) {
			_, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "w0-a", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil, err
		})
		if got := opsA.reconciles("w0"); got <= before {
			t.Errorf("w0 reconciliations by A = %d after its child was deleted, want more than %d", got, before)
		}
	})

	t.Run("the event broadcaster starts with the first Event", func(t *testing.T) {
		if g := eventGoroutines(); g != "" {
			t.Fatalf("an event broadcaster runs before any Event was recorded:\n%s", g)
		}
		cm, err := kc.CoreV1().ConfigMaps(ns).Get(t.Context(), "w1-a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		events.Event(cm, corev1.EventTypeNormal, "Checked", "the first Event of this Run")
		poll(t, "the Event in the API server", func(ctx context.Context) (bool, error) {
			list, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=w1-a,reason=Checked"})
			return err == nil && len(list.Items) == 1, err
		})
		if eventGoroutines() == "" {
			t.Error("no event broadcaster goroutine after an Event was recorded: the check above would pass without one")
		}
		// A recorder asked for while Run runs records too (it dropped
		// every Event).
		late := op.EventRecorder(clientgoscheme.Scheme)
		late.Event(cm, corev1.EventTypeNormal, "CheckedLate", "an Event of a recorder made during Run")
		poll(t, "the late recorder's Event in the API server", func(ctx context.Context) (bool, error) {
			list, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=w1-a,reason=CheckedLate"})
			return err == nil && len(list.Items) == 1, err
		})
	})

	t.Run("endpoints", func(t *testing.T) {
		base := metricsURL(t, op)
		if code, body := httpGet(t, base+"/readyz"); code != http.StatusOK {
			t.Errorf("/readyz = %d %q, want 200", code, body)
		}
		if code, body := httpGet(t, base+"/healthz"); code != http.StatusOK {
			t.Errorf("/healthz = %d %q, want 200", code, body)
		}
		code, body := httpGet(t, base+"/metrics")
		if code != http.StatusOK || !strings.Contains(body, `controller="widgets-a"`) || !strings.Contains(body, `controller="widgets-b"`) || !strings.Contains(body, "go_goroutines") {
			t.Errorf("/metrics = %d, want both Frameworks' metrics and the Go collector's", code)
		}
		code, body = httpGet(t, base+framework.DebugPath+"?format=text")
		if code != http.StatusOK || strings.Count(body, ns+"/w0") != 2 {
			t.Errorf("%s = %d, want w0 listed once per Framework:\n%s", framework.DebugPath, code, body)
		}
	})

	if err := stop(); err != nil {
		t.Fatalf("Run() = %v, want nil after its context ended", err)
	}
	checkLeaks()
}

// eventGoroutines returns the stacks of the goroutines of client-go's event
// broadcaster, "" when none runs.
func eventGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "k8s.io/client-go/tools/record.") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// metricsURL is the base URL of op's metrics endpoint.
func metricsURL(t *testing.T, op *operatorpkg.Operator) string {
	t.Helper()
	var u string
	poll(t, "the metrics endpoint", func(context.Context) (bool, error) {
		u = op.MetricsURL()
		return u != "", nil
	})
	return u
}

// TestOperatorLeaderElection runs two replicas on one Lease: only the
// leader reconciles, a leader that stops hands over at once (measured), and
// a leader whose Lease is taken stops reconciling and says so.
func TestOperatorLeaderElection(t *testing.T) {
	// Not parallel, though its Lease is its own: it measures the failover
	// against the lease duration, and the leader must renew within its
	// renew deadline. Beside the parallel tests a failover took up to 2 s
	// (0.1 s alone) of the 4 s it may take.
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	const (
		lease  = 4 * time.Second
		renew  = 3 * time.Second
		period = 500 * time.Millisecond
	)
	replica := func() (*operatorpkg.Operator, *framework.Framework, *ownedConfigMapOps) {
		op, err := operatorpkg.New(operatorpkg.Config{
			RESTConfig:              env.Config(),
			Name:                    "op-le",
			Logger:                  log.NewNopLogger(),
			Registry:                prometheus.NewRegistry(),
			LeaderElection:          true,
			LeaderElectionNamespace: ns,
			LeaseDuration:           lease,
			RenewDeadline:           renew,
			RetryPeriod:             period,
		})
		if err != nil {
			t.Fatal(err)
		}
		ops := newOwnedConfigMapOps("le", op.OwnWrites())
		f := operatorFramework(t, op, ns, "widgets-le", ops)
		if err := op.Add(f); err != nil {
			t.Fatal(err)
		}
		return op, f, ops
	}
	op1, f1, _ := replica()
	stop1, done1 := runOperator(op1)
	t.Cleanup(func() { _ = stop1() })
	select {
	case <-f1.Booted():
	case err := <-done1:
		t.Fatalf("replica one returned before leading: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("replica one did not lead within 60 s")
	}
	op2, f2, ops2 := replica()
	stop2, done2 := runOperator(op2)
	t.Cleanup(func() { _ = stop2() })
	createWidget(t, newWidget(ns, "w", "", map[string]string{"k": "v"}))
	kc := kubeClient(t)
	poll(t, "the leader to reconcile w", func(ctx context.Context) (bool, error) {
		_, err := kc.CoreV1().ConfigMaps(ns).Get(ctx, "w-le", metav1.GetOptions{})
		return err == nil, nil
	})
	select {
	case <-f2.Booted():
		t.Fatal("the second replica booted its framework while the first leads")
	default:
	}
	if got := ops2.reconciles("w"); got != 0 {
		t.Fatalf("the second replica reconciled w %d times while not leading", got)
	}

	// Failover: the leader stops (SIGTERM in a pod), releases the Lease,
	// and the other replica leads well before the Lease would expire.
	start := time.Now()
	if err := stop1(); err != nil {
		t.Fatalf("replica one: Run() = %v, want nil", err)
	}
	select {
	case <-f2.Booted():
	case err := <-done2:
		t.Fatalf("replica two returned before leading: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("replica two did not lead within 60 s")
	}
	failover := time.Since(start)
	t.Logf("failover after a clean stop: %s (lease %s, retry period %s)", failover.Round(time.Millisecond), lease, period)
	if failover >= lease {
		t.Errorf("failover took %s, want less than the lease duration %s: the Lease was not released", failover, lease)
	}

	// Lease loss: someone else takes the Lease; the leader cannot renew and
	// stops within its renew deadline.
	start = time.Now()
	stealLease(t, ns, "op-le")
	select {
	case err := <-done2:
		t.Logf("replica two stopped %s after losing the Lease: %v", time.Since(start).Round(time.Millisecond), err)
		if !errors.Is(err, operatorpkg.ErrLeaseLost) {
			t.Fatalf("Run() = %v, want ErrLeaseLost", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("replica two still runs 60 s after its Lease was taken")
	}
}

// stealLease makes "an-intruder" the holder of the Lease ns/name for an
// hour, as another replica taking over would: its holder cannot renew it
// any more. A member Lease of sharding gets another instance too.
func stealLease(t *testing.T, ns, name string) {
	t.Helper()
	leases := kubeClient(t).CoordinationV1().Leases(ns)
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		l, err := leases.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		l.Spec.HolderIdentity = ptr("an-intruder")
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Annotations[operatorpkg.InstanceAnnotation] = "an-intruder"
		l.Spec.RenewTime = &metav1.MicroTime{Time: time.Now().Add(time.Hour)}
		l.Spec.LeaseDurationSeconds = ptr(int32(3600))
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("take the Lease %s/%s: %v", ns, name, err)
	}
}
