package informer

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("k8s.io/klog/v2.(*loggingT).flushDaemon"),
		goleak.IgnoreAnyFunction("k8s.io/klog/v2.(*flushDaemon).run.func1"))
}

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

func widget(ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// fakeClient is a fake dynamic client whose watches signal on watching once
// they are registered, so tests can wait for the informer's watch before
// changing objects (the fake tracker has no resource versions to catch up
// from).
type fakeClient struct {
	*fake.FakeDynamicClient
	watching chan struct{}
	once     sync.Once
}

func newFakeClient(objs ...runtime.Object) *fakeClient {
	c := &fakeClient{
		FakeDynamicClient: fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
			map[schema.GroupVersionResource]string{widgets: "WidgetList"}, objs...),
		watching: make(chan struct{}),
	}
	c.PrependWatchReactor("*", func(a clienttesting.Action) (bool, watch.Interface, error) {
		w, err := c.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err == nil {
			c.once.Do(func() { close(c.watching) })
		}
		return true, w, err
	})
	return c
}

// start runs inf until the test ends and waits for its cache and watch.
func start(t *testing.T, inf *Informer, c *fakeClient) {
	t.Helper()
	run(t, inf)
	select {
	case <-c.watching:
	case <-time.After(30 * time.Second):
		t.Fatal("watch not started")
	}
}

// nilLogger is a logger whose nil pointer panics at its first line.
type nilLogger struct{ lines int }

func (l *nilLogger) Log(...any) error { l.lines++; return nil }

func TestNewValidatesConfig(t *testing.T) {
	client := newFakeClient()
	tests := []struct {
		name      string
		config    Config
		wantField string
	}{
		{name: "missing client", config: Config{GVR: widgets}, wantField: "informer.Config needs a client: set RESTConfig and ObjectType"},
		{name: "client and REST client", config: Config{Client: client, RESTClient: &rest.RESTClient{}, ObjectType: &corev1.ConfigMap{}, GVR: widgets}, wantField: "informer.Config.RESTConfig, Client and RESTClient exclude each other"},
		{name: "REST config and client", config: Config{Client: client, RESTConfig: &rest.Config{}, ObjectType: &corev1.ConfigMap{}, GVR: widgets}, wantField: "informer.Config.RESTConfig, Client and RESTClient exclude each other"},
		{name: "REST client without object type", config: Config{RESTClient: &rest.RESTClient{}, GVR: widgets}, wantField: "informer.Config.ObjectType must not be empty when RESTClient"},
		{name: "REST config without object type", config: Config{RESTConfig: &rest.Config{}, GVR: widgets}, wantField: "informer.Config.ObjectType must not be empty when RESTConfig"},
		{name: "REST config with a nil object type", config: Config{RESTConfig: &rest.Config{}, ObjectType: (*corev1.ConfigMap)(nil), GVR: widgets}, wantField: "Config.ObjectType must be a non-nil pointer to a struct"},
		{name: "nil pointer client", config: Config{Client: (*dynamic.DynamicClient)(nil), GVR: widgets}, wantField: "informer.Config.Client is a nil *dynamic.DynamicClient"},
		{name: "nil pointer REST client", config: Config{RESTClient: (*rest.RESTClient)(nil), ObjectType: &corev1.ConfigMap{}, GVR: widgets}, wantField: "informer.Config.RESTClient is a nil *rest.RESTClient"},
		{name: "nil pointer logger", config: Config{Client: client, GVR: widgets, Logger: (*nilLogger)(nil)}, wantField: "informer.Config.Logger is a nil *informer.nilLogger"},
		{name: "ResyncPeriod of nanoseconds", config: Config{Client: client, GVR: widgets, ResyncPeriod: 30}, wantField: "informer.Config.ResyncPeriod 30ns must be at least 1s"},
		{name: "ResyncPeriod under a second", config: Config{Client: client, GVR: widgets, ResyncPeriod: 999 * time.Millisecond}, wantField: "informer.Config.ResyncPeriod 999ms"},
		{name: "REST client of another group version", config: Config{RESTClient: coreV1RESTClient(t), ObjectType: &corev1.ConfigMap{}, GVR: widgets}, wantField: `informer.Config.RESTClient is a client of "v1", not of GVR's group version "example.com/v1"`},
		{name: "negative mutation cache size", config: Config{Client: client, GVR: widgets, MutationCacheSize: -1}, wantField: "informer.Config.MutationCacheSize"},
		{name: "missing resource", config: Config{Client: client, GVR: schema.GroupVersionResource{Group: "g", Version: "v1"}}, wantField: "informer.Config.GVR.Resource"},
		{name: "missing version", config: Config{Client: client, GVR: schema.GroupVersionResource{Group: "g", Resource: "widgets"}}, wantField: "informer.Config.GVR.Version"},
		{name: "bad label selector", config: Config{Client: client, GVR: widgets, LabelSelector: "a=b=c"}, wantField: "informer.Config.LabelSelector"},
		{name: "name not UTF-8", config: Config{Client: client, GVR: widgets, Name: "widgets\xff"}, wantField: "informer.Config.Name"},
		{name: "registerer with another collector of a metric's name", config: Config{Client: client, GVR: widgets, Registerer: conflictingRegistry()}, wantField: "informer.Config.Registerer"},
		{name: "bad field selector", config: Config{Client: client, GVR: widgets, FieldSelector: "metadata.name"}, wantField: "informer.Config.FieldSelector"},
		{name: "namespace with a capital", config: Config{Client: client, GVR: widgets, Namespace: "Default"}, wantField: `informer.Config.Namespace "Default" is not a namespace`},
		{name: "namespace with a space", config: Config{Client: client, GVR: widgets, Namespace: "kube system"}, wantField: `informer.Config.Namespace "kube system" is not a namespace`},
		{name: "namespace with a slash", config: Config{Client: client, GVR: widgets, Namespace: "ns/x"}, wantField: `informer.Config.Namespace "ns/x" is not a namespace`},
		{name: "metadata only with a dynamic client", config: Config{Client: client, ObjectType: &metav1.PartialObjectMetadata{}, GVR: widgets}, wantField: "informer.Config.ObjectType *v1.PartialObjectMetadata (metadata only) needs RESTConfig"},
		{name: "metadata only with a REST client", config: Config{RESTClient: coreV1RESTClient(t), ObjectType: &metav1.PartialObjectMetadata{}, GVR: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}}, wantField: "informer.Config.ObjectType *v1.PartialObjectMetadata (metadata only) needs RESTConfig"},
		{name: "metadata only, nil", config: Config{RESTConfig: &rest.Config{}, ObjectType: (*metav1.PartialObjectMetadata)(nil), GVR: widgets}, wantField: "informer.Config.ObjectType is a nil *v1.PartialObjectMetadata"},
		{name: "metadata only of another group version", config: Config{RESTConfig: &rest.Config{}, ObjectType: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}}, GVR: widgets}, wantField: `Config.ObjectType is a PartialObjectMetadata of apiVersion "v1", not of GVR's group version "example.com/v1"`},
		{name: "namespace too long", config: Config{RESTConfig: &rest.Config{}, ObjectType: &corev1.ConfigMap{}, GVR: widgets, Namespace: strings.Repeat("n", 64)}, wantField: "informer.Config.Namespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.config)
			if !errors.Is(err, ErrInvalidConfig) || !IsInvalidConfig(err) {
				t.Fatalf("New() error = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("New() error = %q, want it to name %s", err, tt.wantField)
			}
		})
	}

	inf, err := New(Config{Client: client, GVR: widgets, LabelSelector: "app in (a,b),!legacy", FieldSelector: "metadata.name=x"})
	if err != nil {
		t.Fatalf("New() with valid selectors = %v", err)
	}
	if inf.GVR() != widgets || inf.name != "widgets" || inf.SharedIndexInformer() == nil {
		t.Errorf("GVR, name = %v, %q; want %v, widgets", inf.GVR(), inf.name, widgets)
	}
	if ns, sel := inf.Selection(); ns != "" || !sel.Matches(labels.Set{"app": "a"}) || sel.Matches(labels.Set{"app": "c"}) || sel.Matches(labels.Set{"app": "a", "legacy": ""}) {
		t.Errorf("Selection() = %q, %q; want all namespaces and the selector app in (a,b),!legacy", ns, sel)
	}
	if _, err := New(Config{RESTClient: coreV1RESTClient(t), ObjectType: &corev1.ConfigMap{}, GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}); err != nil {
		t.Errorf("New(RESTClient of GVR's group version) = %v", err)
	}
	inf, err = New(Config{Client: client, GVR: widgets, Namespace: "demo"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Client: client, GVR: widgets, Registerer: (*prometheus.Registry)(nil)}); err != nil {
		t.Errorf("New(Registerer: a nil *prometheus.Registry, which registers nothing) = %v", err)
	}
	if ns, sel := inf.Selection(); ns != "demo" || !sel.Empty() || !sel.Matches(labels.Set{"any": "thing"}) {
		t.Errorf("Selection() = %q, %q; want demo and an empty selector", ns, sel)
	}
}

// coreV1RESTClient returns a clientset's REST client of the core group,
// version v1, which sends nothing until used.
func coreV1RESTClient(t *testing.T) rest.Interface {
	t.Helper()
	kc, err := kubernetes.NewForConfig(&rest.Config{Host: "http://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	return kc.CoreV1().RESTClient()
}

// conflictingRegistry holds a collector of another kind under the name of
// the informers' cache_objects gauge.
func conflictingRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "operatorkit_informer_cache_objects", Help: "Someone else's."}))
	return reg
}

// recorder is an event handler that records what it is told.
type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) add(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, s)
}

func name(obj any) string {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return "tombstone:" + t.Key
	}
	return obj.(*unstructured.Unstructured).GetName()
}

func (r *recorder) OnAdd(obj any, initial bool) {
	if initial {
		r.add("initial " + name(obj))
		return
	}
	r.add("add " + name(obj))
}
func (r *recorder) OnUpdate(_, obj any) { r.add("update " + name(obj)) }
func (r *recorder) OnDelete(obj any)    { r.add("delete " + name(obj)) }

func (r *recorder) waitFor(t *testing.T, want ...string) {
	t.Helper()
	var got []string
	err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		got = append(got[:0], r.events...)
		return strings.Join(got, ",") == strings.Join(want, ","), nil
	})
	if err != nil {
		t.Fatalf("events = %q, want %q", got, want)
	}
}

func TestHandlersGetAndList(t *testing.T) {
	client := newFakeClient(widget("ns", "a", nil))
	reg := prometheus.NewPedanticRegistry()
	inf, err := New(Config{Client: client, GVR: widgets, Registerer: reg, Name: "test"})
	if err != nil {
		t.Fatal(err)
	}
	before := &recorder{}
	if _, err := inf.AddEventHandler(before); err != nil {
		t.Fatal(err)
	}
	start(t, inf, client)

	after := &recorder{}
	afterReg, err := inf.AddEventHandler(after)
	if err != nil {
		t.Fatal(err)
	}
	ri := client.Resource(widgets).Namespace("ns")
	ctx := context.Background()
	if _, err := ri.Create(ctx, widget("ns", "b", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before.waitFor(t, "initial a", "add b")
	after.waitFor(t, "initial a", "add b")
	if !afterReg.HasSynced() {
		t.Error("registration of a handler that got the initial list: HasSynced() = false")
	}

	b := widget("ns", "b", map[string]string{"changed": "yes"})
	if _, err := ri.Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	before.waitFor(t, "initial a", "add b", "update b")

	obj, exists, err := inf.Get("ns/b")
	if err != nil || !exists || obj.(*unstructured.Unstructured).GetLabels()["changed"] != "yes" {
		t.Errorf("Get(ns/b) = %v, %v, %v; want the updated widget", obj, exists, err)
	}
	if _, exists, _ := inf.Get("ns/nope"); exists {
		t.Error("Get(ns/nope) exists")
	}

	if err := inf.RemoveEventHandler(afterReg); err != nil {
		t.Fatal(err)
	}
	if err := ri.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before.waitFor(t, "initial a", "add b", "update b", "delete a")
	after.waitFor(t, "initial a", "add b", "update b")
	if got := len(inf.List()); got != 1 {
		t.Errorf("len(List()) = %d, want 1", got)
	}

	want := `
# HELP operatorkit_informer_cache_objects Objects in the cache of running informers.
# TYPE operatorkit_informer_cache_objects gauge
operatorkit_informer_cache_objects{informer="test"} 1
# HELP operatorkit_informer_events_total Add, update and delete notifications delivered by informers, not counting resyncs.
# TYPE operatorkit_informer_events_total counter
operatorkit_informer_events_total{event="add",informer="test"} 2
operatorkit_informer_events_total{event="delete",informer="test"} 1
operatorkit_informer_events_total{event="update",informer="test"} 1
# HELP operatorkit_informer_undecodable_objects_total Objects (list items or watch events) that the Go type of a typed informer could not hold, cached unstructured instead.
# TYPE operatorkit_informer_undecodable_objects_total counter
operatorkit_informer_undecodable_objects_total{informer="test"} 0
# HELP operatorkit_informer_watch_errors_total Errors that ended an informer's list or watch (the informer retries by itself).
# TYPE operatorkit_informer_watch_errors_total counter
operatorkit_informer_watch_errors_total{informer="test"} 0
`
	// The metrics handler runs on its own goroutine: poll.
	var cmpErr error
	_ = wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		cmpErr = testutil.GatherAndCompare(reg, strings.NewReader(want))
		return cmpErr == nil, nil
	})
	if cmpErr != nil {
		t.Error(cmpErr)
	}
}

func TestRunTwiceAndAfterStop(t *testing.T) {
	client := newFakeClient(widget("ns", "a", nil))
	reg := prometheus.NewRegistry()
	inf, err := New(Config{Client: client, GVR: widgets, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inf.Run(ctx); !errors.Is(err, ErrAlreadyStarted) {
		t.Errorf("second Run() = %v, want ErrAlreadyStarted", err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run() = %v, want nil", err)
	}
	if err := inf.Run(context.Background()); !errors.Is(err, ErrAlreadyStarted) {
		t.Errorf("Run() after stop = %v, want ErrAlreadyStarted", err)
	}
	if _, err := inf.AddEventHandler(&recorder{}); err == nil {
		t.Error("AddEventHandler() after stop = nil error")
	}
	// The stopped informer's objects leave the gauge; the cache keeps them.
	if got := testutil.ToFloat64(inf.metrics.cacheObjects); got != 0 {
		t.Errorf("cache_objects after stop = %v, want 0", got)
	}
	if _, exists, _ := inf.Get("ns/a"); !exists {
		t.Error("Get(ns/a) after stop: not in cache")
	}

	// A second informer with the same registry reuses the collectors.
	if _, err := New(Config{Client: client, GVR: widgets, Registerer: reg}); err != nil {
		t.Errorf("New() with the same registry = %v", err)
	}
}

func TestWaitForCacheSyncContextEnds(t *testing.T) {
	inf, err := New(Config{Client: newFakeClient(), GVR: widgets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := inf.WaitForCacheSync(ctx); !errors.Is(err, ErrNotSynced) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("WaitForCacheSync() without Run = %v, want ErrNotSynced and DeadlineExceeded", err)
	}
	if inf.HasSynced() {
		t.Error("HasSynced() without Run = true")
	}
}

func TestTransforms(t *testing.T) {
	withManaged := func(name string) *unstructured.Unstructured {
		u := widget("ns", name, nil)
		u.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}})
		return u
	}
	tests := []struct {
		name        string
		drop        bool
		transform   cache.TransformFunc
		wantManaged bool
		wantLabel   string
	}{
		{name: "none", wantManaged: true},
		{name: "drop managed fields", drop: true},
		{
			name: "transform sees managed fields dropped",
			drop: true,
			transform: func(obj any) (any, error) {
				u := obj.(*unstructured.Unstructured)
				u.SetLabels(map[string]string{"managed": map[bool]string{true: "seen", false: "gone"}[len(u.GetManagedFields()) > 0]})
				return u, nil
			},
			wantLabel: "gone",
		},
		{
			name: "transform only",
			transform: func(obj any) (any, error) {
				u := obj.(*unstructured.Unstructured)
				u.SetLabels(map[string]string{"managed": map[bool]string{true: "seen", false: "gone"}[len(u.GetManagedFields()) > 0]})
				return u, nil
			},
			wantManaged: true,
			wantLabel:   "seen",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			client := newFakeClient(withManaged("listed"))
			inf, err := New(Config{Client: client, GVR: widgets, DropManagedFields: tt.drop, Transform: tt.transform})
			if err != nil {
				t.Fatal(err)
			}
			start(t, inf, client)
			if _, err := client.Resource(widgets).Namespace("ns").Create(context.Background(), withManaged("watched"), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, key := range []string{"ns/listed", "ns/watched"} {
				var obj any
				err := wait.PollUntilContextTimeout(context.Background(), 5*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
					var exists bool
					obj, exists, _ = inf.Get(key)
					return exists, nil
				})
				if err != nil {
					t.Fatalf("%s never cached", key)
				}
				u := obj.(*unstructured.Unstructured)
				if got := len(u.GetManagedFields()) > 0; got != tt.wantManaged {
					t.Errorf("%s: has managedFields = %v, want %v", key, got, tt.wantManaged)
				}
				if got := u.GetLabels()["managed"]; got != tt.wantLabel {
					t.Errorf("%s: label managed = %q, want %q", key, got, tt.wantLabel)
				}
			}
		})
	}
}

func TestWatchErrorsAreCountedAndForwarded(t *testing.T) {
	client := newFakeClient()
	var failed sync.Once
	client.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		handled := false
		failed.Do(func() { handled = true })
		if handled {
			return true, nil, errors.New("boom")
		}
		return false, nil, nil
	})
	reg := prometheus.NewRegistry()
	inf, err := New(Config{Client: client, GVR: widgets, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, _, errs := inf.Watch(ctx)
	start(t, inf, client) // the watch is retried after the error
	select {
	case err := <-errs:
		if !strings.Contains(err.Error(), "boom") || !strings.Contains(err.Error(), "widgets") {
			t.Errorf("watch error = %q, want it to say boom and name the resource", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch error on errChan")
	}
	if got := testutil.ToFloat64(inf.metrics.watchErrors); got != 1 {
		t.Errorf("watch_errors_total = %v, want 1", got)
	}
}

func TestMutation(t *testing.T) {
	cached := widget("ns", "a", map[string]string{"v": "1"})
	cached.SetResourceVersion("1")
	client := newFakeClient(cached)
	inf, err := New(Config{Client: client, GVR: widgets, ResyncPeriod: -1, DropManagedFields: true})
	if err != nil {
		t.Fatal(err)
	}
	labelOf := func(key string) (string, bool) {
		obj, ok, err := inf.Get(key)
		if err != nil || !ok {
			return "", false
		}
		return obj.(*unstructured.Unstructured).GetLabels()["v"], true
	}
	inf.Mutation(nil) // ignored, and before Run: no panic
	start(t, inf, client)

	written := widget("ns", "a", map[string]string{"v": "5"})
	written.SetResourceVersion("5")
	written.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "test"}})
	inf.Mutation(written)
	if v, _ := labelOf("ns/a"); v != "5" {
		t.Fatalf("Get after Mutation: label v = %q, want the written 5", v)
	}
	if obj, _, _ := inf.Get("ns/a"); obj.(*unstructured.Unstructured).GetManagedFields() != nil {
		t.Error("a mutation kept managedFields although DropManagedFields is set")
	}

	older := widget("ns", "a", map[string]string{"v": "3"})
	older.SetResourceVersion("3")
	inf.Mutation(older)
	if v, _ := labelOf("ns/a"); v != "5" {
		t.Fatalf("label v = %q after the answer of an older write, want 5 (the newest written)", v)
	}

	// The cache catches up with a newer version: it wins over the mutation.
	newer := widget("ns", "a", map[string]string{"v": "9"})
	newer.SetResourceVersion("9")
	if _, err := client.Resource(widgets).Namespace("ns").Update(t.Context(), newer, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		v, _ := labelOf("ns/a")
		return v == "9", nil
	}); err != nil {
		t.Fatalf("the cache's newer version never replaced the mutation: %v", err)
	}

	// An object of another type than the cached ones is not recorded.
	typed := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", ResourceVersion: "20"}}
	inf.Mutation(typed)
	if obj, _, _ := inf.Get("ns/a"); obj == nil || obj.(*unstructured.Unstructured).GetResourceVersion() != "9" {
		t.Errorf("Get after a mutation of the wrong type = %#v, want the cached widget at 9", obj)
	}

	// An object the cache does not hold, written at a version the informer
	// delivered already, is not returned: a delete after a write is never
	// hidden (and until then it is: TestMutationShowsCreates).
	created := widget("ns", "b", nil)
	created.SetResourceVersion("9")
	inf.Mutation(created)
	if _, ok := labelOf("ns/b"); ok {
		t.Error("Get returned a mutation of an object the cache does not hold, at a version the informer delivered")
	}
}

func TestNewRESTClientErrors(t *testing.T) {
	noop := func(*runtime.Scheme) error { return nil }
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	tests := []struct {
		name        string
		cfg         *rest.Config
		gv          schema.GroupVersion
		addToScheme func(*runtime.Scheme) error
		want        string
	}{
		{"no config", nil, schema.GroupVersion{Version: "v1"}, noop, "rest.Config"},
		{"no version", cfg, schema.GroupVersion{Group: "g"}, noop, "version"},
		{"no addToScheme", cfg, schema.GroupVersion{Group: "g", Version: "v1"}, nil, "addToScheme"},
		{"addToScheme fails", cfg, schema.GroupVersion{Group: "g", Version: "v1"}, func(*runtime.Scheme) error { return errors.New("boom") }, "boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewRESTClient(tt.cfg, tt.gv, tt.addToScheme)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("NewRESTClient() error = %v, want one naming %s", err, tt.want)
			}
		})
	}
	if _, err := NewRESTClient(cfg, schema.GroupVersion{Group: "g", Version: "v1"}, noop); err != nil {
		t.Errorf("NewRESTClient(valid) = %v", err)
	}
}
