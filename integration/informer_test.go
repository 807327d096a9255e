package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer"
)

// pollTimeout bounds every wait for the informer to catch up.
const pollTimeout = 30 * time.Second

// widgets creates, updates and deletes Widgets in one namespace.
type widgets struct {
	t   *testing.T
	gvr schema.GroupVersionResource
	ri  dynamic.ResourceInterface
}

func newWidgets(t *testing.T, gvr schema.GroupVersionResource, ns string) *widgets {
	return &widgets{t: t, gvr: gvr, ri: dynamicClientset(t).Resource(gvr).Namespace(ns)}
}

func (w *widgets) create(name string, labels map[string]string) {
	w.t.Helper()
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(w.gvr.GroupVersion().String())
	u.SetKind("Widget")
	u.SetName(name)
	u.SetLabels(labels)
	_ = unstructured.SetNestedField(u.Object, "small", "spec", "size")
	if _, err := w.ri.Create(w.t.Context(), u, metav1.CreateOptions{}); err != nil {
		w.t.Fatalf("create widget %s: %v", name, err)
	}
}

// patch merges patch (JSON) into the widget.
func (w *widgets) patch(name, patch string) {
	w.t.Helper()
	if _, err := w.ri.Patch(w.t.Context(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		w.t.Fatalf("patch widget %s: %v", name, err)
	}
}

func (w *widgets) delete(name string) {
	w.t.Helper()
	if err := w.ri.Delete(w.t.Context(), name, metav1.DeleteOptions{}); err != nil {
		w.t.Fatalf("delete widget %s: %v", name, err)
	}
}

// runInformer runs inf until the test ends, checks that Run then returns
// nil, and waits for the cache to sync.
func runInformer(t *testing.T, inf *informer.Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("informer Run() = %v, want nil", err)
			}
		case <-time.After(pollTimeout):
			t.Error("informer Run() did not return after its context ended")
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, pollTimeout)
	defer syncCancel()
	if err := inf.WaitForCacheSync(syncCtx); err != nil {
		t.Fatalf("WaitForCacheSync: %v", err)
	}
}

// eventLog is an event handler that records "verb name[ label=value]".
type eventLog struct {
	mu     sync.Mutex
	events []string
}

func (l *eventLog) record(verb string, obj any) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	u := obj.(*unstructured.Unstructured)
	s := verb + " " + u.GetName()
	if v, ok := u.GetLabels()["color"]; ok {
		s += " color=" + v
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, s)
}

func (l *eventLog) OnAdd(obj any, _ bool) { l.record("add", obj) }
func (l *eventLog) OnUpdate(_, obj any)   { l.record("update", obj) }
func (l *eventLog) OnDelete(obj any)      { l.record("delete", obj) }
func (l *eventLog) snapshot() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}
func (l *eventLog) String() string { return strings.Join(l.snapshot(), ", ") }
func (l *eventLog) has(events ...string) bool {
	got := l.snapshot()
	for _, e := range events {
		if !slices.Contains(got, e) {
			return false
		}
	}
	return true
}

// eventually polls cond until it holds or pollTimeout passes.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, pollTimeout, true, func(context.Context) (bool, error) {
		return cond(), nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestInformerHandlersAndCache(t *testing.T) {
	t.Parallel() // its own CRD group and namespace
	gvr := createWidgetCRD(t)
	ns := newNamespace(t)
	w := newWidgets(t, gvr, ns)
	w.create("listed", map[string]string{"color": "red"})

	reg := prometheus.NewRegistry()
	inf, err := informer.New(informer.Config{
		Client: dynamicClientset(t), GVR: gvr, Namespace: ns,
		ResyncPeriod: -1, Registerer: reg, Name: "widgets-it",
	})
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	if _, err := inf.AddEventHandler(log); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)

	if obj, exists, err := inf.Get(ns + "/listed"); err != nil || !exists || obj.(*unstructured.Unstructured).GetName() != "listed" {
		t.Fatalf("Get(%s/listed) after sync = %v, %v, %v", ns, obj, exists, err)
	}

	w.create("watched", map[string]string{"color": "red"})
	w.patch("watched", `{"metadata":{"labels":{"color":"blue"}}}`)
	w.delete("listed")
	want := []string{"add listed color=red", "add watched color=red", "update watched color=blue", "delete listed color=red"}
	eventually(t, fmt.Sprintf("events %q", want), func() bool { return log.has(want...) })
	if got := log.snapshot(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want exactly %q", got, want)
	}

	obj, exists, err := inf.Get(ns + "/watched")
	if err != nil || !exists || obj.(*unstructured.Unstructured).GetLabels()["color"] != "blue" {
		t.Errorf("Get(%s/watched) = %v, %v, %v; want the blue widget", ns, obj, exists, err)
	}
	if _, exists, _ := inf.Get(ns + "/listed"); exists {
		t.Errorf("Get(%s/listed) after delete: still cached", ns)
	}
	if n := len(inf.List()); n != 1 {
		t.Errorf("len(List()) = %d, want 1", n)
	}
	eventually(t, "cache_objects gauge = 1", func() bool {
		n, err := testutil.GatherAndCount(reg, "operatorkit_informer_cache_objects")
		return err == nil && n == 1 && gaugeValue(reg, "operatorkit_informer_cache_objects") == 1
	})
}

// gaugeValue returns the value of the only series of the metric name in reg.
func gaugeValue(reg *prometheus.Registry, name string) float64 {
	mfs, err := reg.Gather()
	if err != nil {
		return -1
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	return -1
}

func TestInformerWatchChannels(t *testing.T) {
	t.Parallel()
	gvr := createWidgetCRD(t)
	ns := newNamespace(t)
	w := newWidgets(t, gvr, ns)
	w.create("listed", nil)

	inf, err := informer.New(informer.Config{Client: dynamicClientset(t), GVR: gvr, Namespace: ns, ResyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	watchCtx, stopWatch := context.WithCancel(t.Context())
	defer stopWatch()
	deletes, updates, errs := inf.Watch(watchCtx) // before Run
	runInformer(t, inf)

	next := func(ch <-chan watch.Event, wantType watch.EventType, wantName string) {
		t.Helper()
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("channel closed, want %s %s", wantType, wantName)
			}
			if name := ev.Object.(*unstructured.Unstructured).GetName(); ev.Type != wantType || name != wantName {
				t.Fatalf("event %s %s, want %s %s", ev.Type, name, wantType, wantName)
			}
		case err := <-errs:
			t.Fatalf("watch error: %v", err)
		case <-time.After(pollTimeout):
			t.Fatalf("no event, want %s %s", wantType, wantName)
		}
	}
	next(updates, watch.Added, "listed")
	w.create("watched", nil)
	next(updates, watch.Added, "watched")
	w.patch("watched", `{"spec":{"size":"large"}}`)
	next(updates, watch.Modified, "watched")
	w.delete("watched")
	next(deletes, watch.Deleted, "watched")

	// A second Watch after Run first gets the cache as adds.
	lateCtx, stopLate := context.WithCancel(t.Context())
	_, lateUpdates, _ := inf.Watch(lateCtx)
	next(lateUpdates, watch.Added, "listed")
	stopLate()

	stopWatch()
	for name, ch := range map[string]<-chan watch.Event{"deleteChan": deletes, "updateChan": updates, "late updateChan": lateUpdates} {
		eventually(t, name+" closed", func() bool {
			select {
			case _, ok := <-ch:
				return !ok
			default:
				return false
			}
		})
	}
	eventually(t, "errChan closed", func() bool {
		select {
		case _, ok := <-errs:
			return !ok
		default:
			return false
		}
	})
}

func TestInformerLabelSelector(t *testing.T) {
	t.Parallel()
	gvr := createWidgetCRD(t)
	ns := newNamespace(t)
	w := newWidgets(t, gvr, ns)
	w.create("red", map[string]string{"color": "red"})
	w.create("blue", map[string]string{"color": "blue"})
	w.create("plain", nil)

	inf, err := informer.New(informer.Config{
		Client: dynamicClientset(t), GVR: gvr, Namespace: ns, ResyncPeriod: -1,
		LabelSelector: "color=red",
	})
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{}
	if _, err := inf.AddEventHandler(log); err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)

	keys := func() []string {
		var ks []string
		for _, o := range inf.List() {
			ks = append(ks, o.(*unstructured.Unstructured).GetName())
		}
		slices.Sort(ks)
		return ks
	}
	if got := keys(); !slices.Equal(got, []string{"red"}) {
		t.Fatalf("cached after sync = %v, want [red]", got)
	}

	// blue turns red: it enters the selection as an add; red turns green:
	// it leaves it as a delete.
	w.patch("blue", `{"metadata":{"labels":{"color":"red"}}}`)
	w.patch("red", `{"metadata":{"labels":{"color":"green"}}}`)
	w.create("late-red", map[string]string{"color": "red"})
	w.create("late-plain", nil)
	want := []string{"add red color=red", "add blue color=red", "delete red color=red", "add late-red color=red"}
	eventually(t, fmt.Sprintf("events %q", want), func() bool { return log.has(want...) })
	eventually(t, "cache [blue late-red]", func() bool { return slices.Equal(keys(), []string{"blue", "late-red"}) })
	if got := log.snapshot(); !slices.Equal(got, want) {
		t.Errorf("events = %q, want exactly %q", got, want)
	}
}

func TestInformerDropManagedFields(t *testing.T) {
	t.Parallel()
	gvr := createWidgetCRD(t)
	ns := newNamespace(t)
	w := newWidgets(t, gvr, ns)
	w.create("listed", nil)

	newInf := func(drop bool) *informer.Informer {
		inf, err := informer.New(informer.Config{Client: dynamicClientset(t), GVR: gvr, Namespace: ns, DropManagedFields: drop})
		if err != nil {
			t.Fatal(err)
		}
		runInformer(t, inf)
		return inf
	}
	dropping, keeping := newInf(true), newInf(false)
	w.create("watched", nil)

	for _, name := range []string{"listed", "watched"} {
		key := ns + "/" + name
		for _, tc := range []struct {
			inf         *informer.Informer
			wantManaged bool
		}{{dropping, false}, {keeping, true}} {
			var obj any
			eventually(t, key+" cached", func() bool {
				var exists bool
				obj, exists, _ = tc.inf.Get(key)
				return exists
			})
			if got := len(obj.(*unstructured.Unstructured).GetManagedFields()) > 0; got != tc.wantManaged {
				t.Errorf("%s with DropManagedFields=%v: has managedFields = %v, want %v", key, !tc.wantManaged, got, tc.wantManaged)
			}
		}
	}
}
