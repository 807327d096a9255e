package integration

// The harness of the fault-injection suite (fault_test.go): an operator over
// N widgets whose every request is counted (requestcount) and can be cut off
// (faultTransport), a ConfigMap chain that counts, per widget, the changes the
// API server accepted, resources that panic or hang on demand, and checks
// that every object converged, nothing was done twice and nothing spins.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

// faultN is how many widgets each fault test runs with.
const faultN = 50

// ownerLabel names, on each ConfigMap of the fault chain, the widget it
// belongs to; the child watch uses it to wake the owner up.
const ownerLabel = "fw.test.operatorkit.io/owner"

// widgetName is the name of the i-th widget of a fault test.
func widgetName(i int) string { return fmt.Sprintf("w-%02d", i) }

func cmName(widget string) string { return widget + "-cm" }

// installWidgetCRD installs the Widget CRD on the server of cfg (for tests
// that run their own server; the shared one uses ensureWidgetCRD).
func installWidgetCRD(t *testing.T, cfg *rest.Config) {
	t.Helper()
	c, err := crdclient.New(crdclient.Config{Client: apiextensionsclient.NewForConfigOrDie(cfg)})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.EnsureCreated(t.Context(), widgetCRD(), nil); err != nil {
		t.Fatalf("ensure widget CRD: %v", err)
	}
}

func createNamespace(t *testing.T, kc kubernetes.Interface, name string) {
	t.Helper()
	if _, err := kc.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

// --- the ConfigMap chain ---------------------------------------------------

// faultOps is a crud.Ops that keeps ConfigMap "<widget>-cm" equal to the
// widget's spec.data. It counts, per widget, the creates, updates and
// deletes the API server accepted, which is how the tests see that nothing
// was done twice.
type faultOps struct {
	client kubernetes.Interface

	mu      sync.Mutex
	created map[string]int
	updated map[string]int
	deleted map[string]int
	// beforeUpdate, when set, runs just before an update of widget's
	// ConfigMap is sent, with the ConfigMap as read by GetCurrentState.
	beforeUpdate func(ctx context.Context, widget string, current *corev1.ConfigMap)
}

func newFaultOps(client kubernetes.Interface) *faultOps {
	return &faultOps{client: client, created: map[string]int{}, updated: map[string]int{}, deleted: map[string]int{}}
}

var _ crud.Ops = (*faultOps)(nil)

func (o *faultOps) Name() string { return "configmap" }

func (o *faultOps) count(m map[string]int, widget string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m[widget]++
}

// counts returns copies of the per-widget counters.
func (o *faultOps) counts() (created, updated, deleted map[string]int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.created), maps.Clone(o.updated), maps.Clone(o.deleted)
}

func (o *faultOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	w := obj.(*unstructured.Unstructured)
	cm, err := o.client.CoreV1().ConfigMaps(w.GetNamespace()).Get(ctx, cmName(w.GetName()), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return (*corev1.ConfigMap)(nil), nil
	}
	return cm, err
}

func (o *faultOps) GetDesiredState(ctx context.Context, obj any) (any, error) {
	w := obj.(*unstructured.Unstructured)
	data, _, err := unstructured.NestedStringMap(w.Object, "spec", "data")
	if err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: w.GetNamespace(), Name: cmName(w.GetName()), Labels: map[string]string{ownerLabel: w.GetName()},
	}, Data: data}, nil
}

func (o *faultOps) NewUpdatePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	return configMapUpdatePatch(current, desired), nil
}

func (o *faultOps) NewDeletePatch(ctx context.Context, obj, current, desired any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if cur := current.(*corev1.ConfigMap); cur != nil {
		p.SetDeleteChange(cur)
	}
	return p, nil
}

func (o *faultOps) ApplyCreateChange(ctx context.Context, obj, change any) error {
	cm := change.(*corev1.ConfigMap)
	if _, err := o.client.CoreV1().ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		return err
	}
	o.count(o.created, obj.(*unstructured.Unstructured).GetName())
	return nil
}

// ApplyUpdateChange sends a full update carrying the resourceVersion read by
// GetCurrentState: a concurrent change makes it fail with a conflict, and
// the Framework retries with fresh state.
func (o *faultOps) ApplyUpdateChange(ctx context.Context, obj, change any) error {
	cm := change.(*corev1.ConfigMap)
	widget := obj.(*unstructured.Unstructured).GetName()
	o.mu.Lock()
	hook := o.beforeUpdate
	o.mu.Unlock()
	if hook != nil {
		hook(ctx, widget, cm)
	}
	if _, err := o.client.CoreV1().ConfigMaps(cm.Namespace).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		return err
	}
	o.count(o.updated, widget)
	return nil
}

func (o *faultOps) ApplyDeleteChange(ctx context.Context, obj, change any) error {
	cm := change.(*corev1.ConfigMap)
	err := o.client.CoreV1().ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &cm.UID}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	o.count(o.deleted, obj.(*unstructured.Unstructured).GetName())
	return nil
}

// --- resources that misbehave ----------------------------------------------

// hookResource runs onCreate in EnsureCreated (nil: does nothing) and records
// when each widget's chain reached it.
type hookResource struct {
	name     string
	onCreate func(ctx context.Context, w *unstructured.Unstructured) error

	mu       sync.Mutex
	attempts map[string][]time.Time
}

func newHookResource(name string, onCreate func(ctx context.Context, w *unstructured.Unstructured) error) *hookResource {
	return &hookResource{name: name, onCreate: onCreate, attempts: map[string][]time.Time{}}
}

var _ resource.Interface = (*hookResource)(nil)

func (r *hookResource) Name() string { return r.name }

func (r *hookResource) EnsureCreated(ctx context.Context, obj any) error {
	w := obj.(*unstructured.Unstructured)
	r.mu.Lock()
	r.attempts[w.GetName()] = append(r.attempts[w.GetName()], time.Now())
	r.mu.Unlock()
	if r.onCreate == nil {
		return nil
	}
	return r.onCreate(ctx, w)
}

func (r *hookResource) EnsureDeleted(context.Context, any) error { return nil }

// attemptsOf returns when widget's chain reached the resource.
func (r *hookResource) attemptsOf(widget string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.attempts[widget])
}

// --- the network between operator and API server ---------------------------

// faultTransport sits between the operator's clients and the API server. It
// can cut the operator off (partition: every new request fails as if the
// connection were refused, and every open watch stream breaks), and it
// watches the collection path it is given: it counts relists (a list, or a
// watch that sends initial events) and 410 Gone answers, which the API
// server sends as an ERROR event inside a watch stream.
type faultTransport struct {
	collection string // URL path suffix of the informed collection, "/widgets"

	partitioned atomic.Bool
	relists     atomic.Int64
	expired     atomic.Int64

	mu      sync.Mutex
	streams map[*watchBody]struct{}
}

func newFaultTransport(collection string) *faultTransport {
	return &faultTransport{collection: collection, streams: map[*watchBody]struct{}{}}
}

// wrap returns a copy of cfg whose requests go through f.
func (f *faultTransport) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper { return &faultRoundTripper{f: f, next: next} })
	return out
}

// partition cuts the operator off the API server until heal: new requests
// fail as if the connection were refused, open watches break.
func (f *faultTransport) partition() {
	f.mu.Lock()
	f.partitioned.Store(true)
	f.mu.Unlock()
	f.dropWatches()
}

// dropWatches breaks every open watch stream as a lost connection does: the
// client reads an unexpected EOF, and client-go's reflector watches again
// from the last resourceVersion it saw.
func (f *faultTransport) dropWatches() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for b := range f.streams {
		b.broken.Store(true)
		b.ReadCloser.Close()
	}
}

func (f *faultTransport) heal() { f.partitioned.Store(false) }

type faultRoundTripper struct {
	f    *faultTransport
	next http.RoundTripper
}

var errPartitioned = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

func (rt *faultRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if rt.f.partitioned.Load() {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, errPartitioned
	}
	watching := false
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, rt.f.collection) {
		q := req.URL.Query()
		watching = q.Get("watch") == "true" || q.Get("watch") == "1"
		if !watching || q.Get("sendInitialEvents") == "true" {
			rt.f.relists.Add(1)
		}
	}
	resp, err := rt.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode == http.StatusGone {
		rt.f.expired.Add(1)
	}
	if watching {
		b := &watchBody{ReadCloser: resp.Body, f: rt.f}
		rt.f.mu.Lock()
		rt.f.streams[b] = struct{}{}
		if rt.f.partitioned.Load() {
			// Cut off while the watch was being opened.
			b.broken.Store(true)
			b.ReadCloser.Close()
		}
		rt.f.mu.Unlock()
		resp.Body = b
	}
	return resp, nil
}

// watchBody is a watch stream that partition can break and that counts the
// 410 Gone ERROR events it carries.
type watchBody struct {
	io.ReadCloser
	f      *faultTransport
	broken atomic.Bool
	tail   []byte
}

var gone = []byte(`"code":410`)

func (b *watchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.broken.Load() {
		return 0, io.ErrUnexpectedEOF
	}
	if n > 0 {
		buf := append(b.tail, p[:n]...)
		b.f.expired.Add(int64(bytes.Count(buf, gone)))
		// Keep a tail shorter than the pattern, so a match split across
		// reads is counted once.
		keep := min(len(buf), len(gone)-1)
		b.tail = append(b.tail[:0], buf[len(buf)-keep:]...)
	}
	return n, err
}

func (b *watchBody) Close() error {
	b.f.mu.Lock()
	delete(b.f.streams, b)
	b.f.mu.Unlock()
	return b.ReadCloser.Close()
}

// --- the operator ----------------------------------------------------------

// harness is one operator deployment: the clients it uses (counted, and
// through a faultTransport) and the Frameworks started with them one after
// the other.
type harness struct {
	t        *testing.T
	ns       string
	requests *requestcount.Counter // every request but events
	events   *requestcount.Counter // the event recorder's requests
	net      *faultTransport
	cfg      *rest.Config
	kube     kubernetes.Interface
	dyn      dynamic.Interface
	// eventKube records events: client-go's broadcaster writes them
	// asynchronously, bounded by its own spam filter, so they are counted
	// apart from the requests the reconciliations make.
	eventKube kubernetes.Interface
}

// newHarness prepares the operator's clients for namespace ns of the server
// of base (the shared server when base is nil).
func newHarness(t *testing.T, base *rest.Config, ns string) *harness {
	t.Helper()
	if base == nil {
		base = env.Config()
	}
	h := &harness{t: t, ns: ns, requests: requestcount.New(), events: requestcount.New(), net: newFaultTransport("/" + widgetGVR.Resource)}
	h.cfg = h.requests.Wrap(h.net.wrap(base))
	h.kube = kubernetes.NewForConfigOrDie(h.cfg)
	h.dyn = dynamicClient(t, h.cfg)
	h.eventKube = kubernetes.NewForConfigOrDie(h.events.Wrap(h.net.wrap(base)))
	return h
}

type opOptions struct {
	workers          int           // default 4
	reconcileTimeout time.Duration // default the Framework's
	backOff          func() backoff.BackOff
	// childWatch runs an informer on the chain's ConfigMaps that enqueues
	// the owning widget whenever its ConfigMap changes or disappears.
	childWatch bool
	logger     log.Logger
}

// operator is a booted Framework with its own metrics registry.
type operator struct {
	*framework.Framework
	reg  *prometheus.Registry
	stop func() // cancels Boot, waits for it and for the event broadcaster
}

// start boots a Framework over the widgets of h.ns with the given resource
// sets; it records events and is stopped in t.Cleanup if not before.
func (h *harness) start(opts opOptions, sets ...*router.ResourceSet) *operator {
	t := h.t
	t.Helper()
	if opts.workers == 0 {
		opts.workers = 4
	}
	if opts.logger == nil {
		opts.logger = log.NewNopLogger()
	}
	reg := prometheus.NewRegistry()
	inf, err := informer.New(informer.Config{Client: h.dyn, GVR: widgetGVR, Namespace: h.ns, Registerer: reg, Logger: opts.logger})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: h.eventKube.CoreV1().Events(h.ns)})
	f, err := framework.New(framework.Config{
		Name:           "widgets",
		Informer:       inf,
		ResourceRouter: rt,
		// The fault tests write finalizers through the metadata client;
		// framework_test.go covers the dynamic one.
		MetadataClient:   metadata.NewForConfigOrDie(h.cfg),
		Resource:         widgetGVR,
		Logger:           opts.logger,
		Registerer:       reg,
		EventRecorder:    broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "widgets-operator"}),
		BackOffFactory:   opts.backOff,
		Workers:          opts.workers,
		ReconcileTimeout: opts.reconcileTimeout,
		TracesPerObject:  64,
	})
	if err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }()
	if opts.childWatch {
		children, err := informer.New(informer.Config{
			Client: h.dyn, GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: h.ns,
			LabelSelector: ownerLabel, Name: "configmaps", ResyncPeriod: -1,
		})
		if err != nil {
			t.Fatal(err)
		}
		enqueueOwner := func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if u, ok := obj.(*unstructured.Unstructured); ok {
				f.Enqueue(u.GetNamespace() + "/" + u.GetLabels()[ownerLabel])
			}
		}
		if _, err := children.AddEventHandler(cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(_, obj any) { enqueueOwner(obj) },
			DeleteFunc: enqueueOwner,
		}); err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _ = children.Run(ctx) })
		if err := children.WaitForCacheSync(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	awaitBoot(t, f, done, cancel)
	stop := bootStopper(t, cancel, done, func() {
		wg.Wait()
		broadcaster.Shutdown()
	})
	return &operator{Framework: f, reg: reg, stop: stop}
}

// faultSet is the resource set of the fault tests: the given resources, in
// order, handling every widget without a version label.
func faultSet(t *testing.T, resources ...resource.Interface) *router.ResourceSet {
	return resourceSet(t, "", resources...)
}

// --- metrics ---------------------------------------------------------------

// metricSum sums the samples of the counter or gauge name whose labels
// include labels.
func metricSum(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metric
				}
			}
			switch {
			case m.GetCounter() != nil:
				sum += m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// reconciles returns the operator's reconciliations, by result ("" for all).
func (op *operator) reconciles(t *testing.T, result string) int {
	labels := map[string]string{}
	if result != "" {
		labels["result"] = result
	}
	return int(metricSum(t, op.reg, "operatorkit_framework_reconciliations_total", labels))
}

// --- widgets and checks ----------------------------------------------------

func widgetData(i, gen int) map[string]string {
	return map[string]string{"index": fmt.Sprint(i), "gen": fmt.Sprint(gen)}
}

// createWidgets creates widgets [from, to) with data widgetData(i, 0).
func createWidgets(t *testing.T, wc dynamic.ResourceInterface, ns string, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if _, err := wc.Create(t.Context(), newWidget(ns, widgetName(i), "", widgetData(i, 0)), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create widget %s: %v", widgetName(i), err)
		}
	}
}

// setWidgetData sets the spec.data of widget name, retrying conflicts.
func setWidgetData(ctx context.Context, wc dynamic.ResourceInterface, name string, data map[string]string) error {
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		w, err := wc.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		if err := unstructured.SetNestedStringMap(w.Object, data, "spec", "data"); err != nil {
			return false, err
		}
		_, err = wc.Update(ctx, w, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
}

// state is what the server holds for the widgets of a namespace.
type state struct {
	widgets map[string]*unstructured.Unstructured
	cms     map[string]*corev1.ConfigMap // by widget name
}

func readState(ctx context.Context, kc kubernetes.Interface, wc dynamic.ResourceInterface, ns string) (state, error) {
	s := state{widgets: map[string]*unstructured.Unstructured{}, cms: map[string]*corev1.ConfigMap{}}
	ws, err := wc.List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, err
	}
	for i := range ws.Items {
		s.widgets[ws.Items[i].GetName()] = &ws.Items[i]
	}
	cms, err := kc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: ownerLabel})
	if err != nil {
		return s, err
	}
	for i := range cms.Items {
		s.cms[cms.Items[i].Labels[ownerLabel]] = &cms.Items[i]
	}
	return s, nil
}

// problems lists why s is not converged for the widgets named live (which
// must exist, carry finalizer exactly once and have a ConfigMap with their
// spec.data) and gone (which must have no widget and no ConfigMap left).
func (s state) problems(finalizer string, live, gone []string) []string {
	var out []string
	for _, name := range live {
		w, ok := s.widgets[name]
		if !ok {
			out = append(out, name+": widget missing")
			continue
		}
		if n := countOf(w.GetFinalizers(), finalizer); n != 1 {
			out = append(out, fmt.Sprintf("%s: finalizer %s %d times in %v", name, finalizer, n, w.GetFinalizers()))
		}
		want, _, _ := unstructured.NestedStringMap(w.Object, "spec", "data")
		cm, ok := s.cms[name]
		switch {
		case !ok:
			out = append(out, name+": configmap missing")
		case !maps.Equal(cm.Data, want):
			out = append(out, fmt.Sprintf("%s: configmap data %v, want %v", name, cm.Data, want))
		}
	}
	for _, name := range gone {
		if _, ok := s.widgets[name]; ok {
			out = append(out, name+": widget still exists")
		}
		if _, ok := s.cms[name]; ok {
			out = append(out, name+": configmap still exists")
		}
	}
	return out
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

// waitConverged waits until every widget of live converged and every widget
// of gone is gone with its ConfigMap, and returns the final state.
func waitConverged(t *testing.T, kc kubernetes.Interface, wc dynamic.ResourceInterface, ns, finalizer string, live, gone []string) state {
	t.Helper()
	var s state
	var last []string
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		if s, err = readState(ctx, kc, wc, ns); err != nil {
			last = []string{err.Error()}
			return false, nil // the server may be restarting
		}
		last = s.problems(finalizer, live, gone)
		return len(last) == 0, nil
	})
	if err != nil {
		sort.Strings(last)
		t.Fatalf("not converged: %v; %d problem(s):\n  %s", err, len(last), strings.Join(last, "\n  "))
	}
	return s
}

func names(from, to int) []string {
	out := make([]string, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, widgetName(i))
	}
	return out
}

// assertOnce fails when a widget of names does not have exactly one
// accepted change in counts (what says which change).
func assertOnce(t *testing.T, what string, counts map[string]int, names []string) {
	t.Helper()
	var bad []string
	for _, n := range names {
		if counts[n] != 1 {
			bad = append(bad, fmt.Sprintf("%s=%d", n, counts[n]))
		}
	}
	if len(bad) > 0 {
		t.Errorf("%s: want exactly 1 per widget, got %s", what, strings.Join(bad, " "))
	}
}

// assertQuiet fails when the operator reconciles or sends any request
// (events apart: they are written asynchronously) during window once it
// converged and settled: a converged operator must not spin. It waits the
// whole window (that is the point) but fails as soon as something moves.
func assertQuiet(t *testing.T, op *operator, h *harness, window time.Duration) {
	t.Helper()
	// The server's state can converge while the operator still finishes the
	// echoes of its last repairs (a child's event, a deferred retry), which
	// on a busy 2-core machine can come more than a second late. Let it
	// settle first: no reconciliation for settle. An operator that spins
	// never settles and fails here.
	assertQuietAfter(t, op, h, 2*time.Second, window)
}

// assertQuietAfter is assertQuiet with a settle time of its own: a test
// whose objects failed with a long backoff needs it longer than the
// longest backoff, because a retry the backoff scheduled before the object
// converged still runs (client-go's delaying queue cannot take it back)
// and finds nothing to do.
func assertQuietAfter(t *testing.T, op *operator, h *harness, settle, window time.Duration) {
	t.Helper()
	last, since := op.reconciles(t, ""), time.Now()
	err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		if n := op.reconciles(t, ""); n != last {
			last, since = n, time.Now()
		}
		return time.Since(since) >= settle, nil
	})
	if err != nil {
		t.Errorf("operator did not settle within 30s after converging (still reconciling: %d so far): it spins", last)
		return
	}
	rec0, req0 := op.reconciles(t, ""), h.requests.Snapshot()
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, window, false, func(context.Context) (bool, error) {
		if rec := op.reconciles(t, ""); rec != rec0 {
			return false, fmt.Errorf("%d reconciliations", rec-rec0)
		}
		if d := h.requests.Snapshot().Sub(req0); d.Total > 0 {
			return false, fmt.Errorf("requests %s", d)
		}
		return false, nil
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("converged operator not quiet for %s: %v", window, err)
	}
}

// events returns the events of ns about widget name with reason.
func events(ctx context.Context, kc kubernetes.Interface, ns, name, reason string) ([]corev1.Event, error) {
	list, err := kc.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// gaps returns the intervals between consecutive times.
func gaps(ts []time.Time) []time.Duration {
	var out []time.Duration
	for i := 1; i < len(ts); i++ {
		out = append(out, ts[i].Sub(ts[i-1]))
	}
	return out
}

// testBackOff is an exponential backoff without jitter: initial, doubling,
// capped at max, never stopping.
func testBackOff(initial, max time.Duration) func() backoff.BackOff {
	return func() backoff.BackOff {
		b := backoff.NewExponentialBackOff()
		b.InitialInterval, b.Multiplier, b.RandomizationFactor, b.MaxInterval, b.MaxElapsedTime = initial, 2, 0, max, 0
		b.Reset()
		return b
	}
}
