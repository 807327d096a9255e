package operator

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource/child"
)

var configMaps = schema.GroupResource{Resource: "configmaps"}

func cm(uid, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: types.UID(uid), ResourceVersion: rv}}
}

// TestOwnWrites plays the orders in which a write's answer and watch events
// can arrive and checks which events wake the owner.
func TestOwnWrites(t *testing.T) {
	type step struct {
		begin  bool
		event  *corev1.ConfigMap // observe an event of this object
		answer *corev1.ConfigMap // settle the write with this answer
		err    error             // settle the write with this error
	}
	tests := []struct {
		name  string
		steps []step
		fired []string // resourceVersions of the events that woke the owner, in order
	}{
		{name: "no write: every event fires", steps: []step{{event: cm("u", "1")}, {event: cm("u", "2")}}, fired: []string{"1", "2"}},
		{name: "answer first, then the echo: dropped", steps: []step{{begin: true}, {answer: cm("u", "5")}, {event: cm("u", "5")}}, fired: nil},
		{name: "echo first, then the answer: dropped", steps: []step{{begin: true}, {event: cm("u", "5")}, {answer: cm("u", "5")}}, fired: nil},
		{name: "a foreign change during the write fires at the answer", steps: []step{{begin: true}, {event: cm("u", "4")}, {event: cm("u", "5")}, {answer: cm("u", "5")}}, fired: []string{"4"}},
		{name: "a failed write releases what it held", steps: []step{{begin: true}, {event: cm("u", "4")}, {err: errors.New("conflict")}}, fired: []string{"4"}},
		{name: "the echo is dropped once: the same version again fires", steps: []step{{begin: true}, {answer: cm("u", "5")}, {event: cm("u", "5")}, {event: cm("u", "5")}}, fired: []string{"5"}},
		{name: "a later foreign change fires", steps: []step{{begin: true}, {answer: cm("u", "5")}, {event: cm("u", "5")}, {event: cm("u", "6")}}, fired: []string{"6"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
			w.Filter(configMaps, &recordingHandler{}) // the one handler, whose events observe gets
			var fired []string
			var done func(metav1.Object, error)
			for _, s := range tt.steps {
				switch {
				case s.begin:
					done = w.Begin(configMaps, "ns", "c")
				case s.event != nil:
					ev := s.event
					w.observe(configMaps, ev, func() { fired = append(fired, ev.ResourceVersion) }, nil)
				case s.answer != nil:
					done(s.answer, nil)
				case s.err != nil:
					done(nil, s.err)
				}
			}
			if len(fired) != len(tt.fired) {
				t.Fatalf("fired %v, want %v", fired, tt.fired)
			}
			for i := range fired {
				if fired[i] != tt.fired[i] {
					t.Fatalf("fired %v, want %v", fired, tt.fired)
				}
			}
			if len(w.pending) != 0 {
				t.Errorf("%d writes still pending after their answers", len(w.pending))
			}
		})
	}
}

func TestOwnWritesForgetOnDelete(t *testing.T) {
	w := &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
	w.Filter(configMaps, &recordingHandler{})
	w.Begin(configMaps, "ns", "c")(cm("u", "5"), nil)
	if len(w.echoes) != 1 {
		t.Fatalf("echoes after the write = %v, want its echo", w.echoes)
	}
	w.forget(configMaps, cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: cm("u", "5")})
	if len(w.echoes) != 0 {
		t.Fatalf("echoes after the object's delete = %v, want none", w.echoes)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	tests := []struct {
		name   string
		config Config
		field  string
	}{
		{name: "no rest config", config: Config{Name: "x"}, field: "RESTConfig"},
		{name: "no name", config: Config{RESTConfig: restConfig()}, field: "Name"},
		{name: "name with a control character", config: Config{RESTConfig: restConfig(), Name: "op\n"}, field: "Name"},
		{name: "name not UTF-8", config: Config{RESTConfig: restConfig(), Name: "op\xff"}, field: "Config.Name"},
		{name: "negative shutdown", config: Config{RESTConfig: restConfig(), Name: "x", ShutdownTimeout: -1}, field: "ShutdownTimeout"},
		{name: "nil pointer logger", config: Config{RESTConfig: restConfig(), Name: "x", Logger: (*recorder)(nil)}, field: "Config.Logger is a nil *operator.recorder"},
		{name: "lease shorter than a second", config: Config{RESTConfig: restConfig(), Name: "x", LeaderElection: true, LeaseDuration: 900 * time.Millisecond, RenewDeadline: 600 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, field: "LeaseDuration"},
		{name: "lease past an int32 of seconds, sharding", config: Config{RESTConfig: restConfig(), Name: "x", Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}}, LeaseDuration: 100 * 365 * 24 * time.Hour}, field: "LeaseDuration"},
		{name: "renew not shorter than lease", config: Config{RESTConfig: restConfig(), Name: "x", LeaderElection: true, LeaseDuration: 5e9, RenewDeadline: 5e9}, field: "RenewDeadline"},
		{name: "renew not shorter than the lease's whole seconds", config: Config{RESTConfig: restConfig(), Name: "x", LeaderElection: true, LeaseDuration: 2950 * time.Millisecond, RenewDeadline: 2900 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, field: "RenewDeadline (2.9s) must be shorter than LeaseDuration in whole seconds (2s of 2.95s)"},
		{name: "renew not shorter than the lease's whole seconds, sharding", config: Config{RESTConfig: restConfig(), Name: "x", Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}}, LeaseDuration: 2950 * time.Millisecond, RenewDeadline: 2900 * time.Millisecond, RetryPeriod: 100 * time.Millisecond}, field: "in whole seconds (2s of 2.95s)"},
		{name: "retry not within the renew deadline", config: Config{RESTConfig: restConfig(), Name: "x", LeaderElection: true, RenewDeadline: 10e9, RetryPeriod: 9e9}, field: "RetryPeriod"},
		{name: "retry equal to the renew deadline, sharding", config: Config{RESTConfig: restConfig(), Name: "x", Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}}, RenewDeadline: 2e9, RetryPeriod: 2e9}, field: "RetryPeriod"},
		{name: "ResyncPeriod of nanoseconds", config: Config{RESTConfig: restConfig(), Name: "x", ResyncPeriod: 30}, field: "Config.ResyncPeriod 30ns must be at least 1s"},
		{name: "nil framework", config: Config{RESTConfig: restConfig(), Name: "x", Frameworks: []*framework.Framework{nil}}, field: "Frameworks[0]"},
		{name: "name no Lease name, leader election", config: Config{RESTConfig: restConfig(), Name: "My Operator", LeaderElection: true}, field: "Name (the default of LeaderElectionID)"},
		{name: "lease id no Lease name", config: Config{RESTConfig: restConfig(), Name: "x", LeaderElection: true, LeaderElectionID: "x_lock"}, field: "LeaderElectionID"},
		{name: "lease id no Lease name, sharding", config: Config{RESTConfig: restConfig(), Name: "x", Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}}, LeaderElectionID: "X"}, field: "LeaderElectionID"},
		{name: "lease namespace no namespace", config: Config{RESTConfig: restConfig(), Name: "x", LeaderElection: true, LeaderElectionNamespace: "kube system"}, field: "LeaderElectionNamespace"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.config)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("New() error = %v, want ErrInvalidConfig naming %s", err, tt.field)
			}
		})
	}
}

// TestNewRefusesAFrameworkTwice: a Framework given twice, in
// Config.Frameworks or to Add, would be booted twice by Run, which then
// fails; New and Add refuse it at once, naming it.
func TestNewRefusesAFrameworkTwice(t *testing.T) {
	newFramework := func(name string) *framework.Framework {
		f, err := framework.New(framework.Config{Name: name, Informer: informertest.New(), ResourceRouter: oneResource(t, &crudless{}), DisableFinalizers: true})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b := newFramework("a"), newFramework("b")
	_, err := New(Config{RESTConfig: restConfig(), Name: "x", Frameworks: []*framework.Framework{a, b, a}})
	if want := `operator.Config.Frameworks[0] and Frameworks[2] are the same Framework "a"`; !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Fatalf("New() error = %v, want ErrInvalidConfig saying %s", err, want)
	}
	o, err := New(Config{RESTConfig: restConfig(), Name: "x", Frameworks: []*framework.Framework{a}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Add(b); err != nil {
		t.Fatalf("Add(b) = %v", err)
	}
	for _, f := range []*framework.Framework{a, b} {
		if err := o.Add(f); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "was added already") {
			t.Errorf("Add() of a Framework added already = %v, want ErrInvalidConfig", err)
		}
	}
	if len(o.frameworks) != 2 {
		t.Errorf("frameworks = %d, want 2", len(o.frameworks))
	}
}

// TestNewRefusesTwoFrameworksOfOneName: two Frameworks of one Operator
// with the same framework.Config.Name (a config copied from another) would
// share the finalizer, the work queue's metrics, the controller label and
// the debug page; New and Add refuse the second, naming the name.
func TestNewRefusesTwoFrameworksOfOneName(t *testing.T) {
	newFramework := func(name string) *framework.Framework {
		f, err := framework.New(framework.Config{Name: name, Informer: informertest.New(), ResourceRouter: oneResource(t, &crudless{}), DisableFinalizers: true})
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	a, b, a2 := newFramework("a"), newFramework("b"), newFramework("a")
	_, err := New(Config{RESTConfig: restConfig(), Name: "x", Frameworks: []*framework.Framework{a, b, a2}})
	if want := `operator.Config.Frameworks[0] and Frameworks[2] have the same name "a"`; !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Fatalf("New() error = %v, want ErrInvalidConfig saying %s", err, want)
	}
	o, err := New(Config{RESTConfig: restConfig(), Name: "x", Frameworks: []*framework.Framework{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Add(a2); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), `a Framework named "a" was added already`) {
		t.Errorf("Add() of a second Framework named a = %v, want ErrInvalidConfig naming a", err)
	}
	if len(o.frameworks) != 2 {
		t.Errorf("frameworks = %d, want 2", len(o.frameworks))
	}
}

func TestRunWithoutFrameworks(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Run(t.Context()); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("Run() without frameworks = %v, want ErrInvalidConfig", err)
	}
	if err := o.Run(t.Context()); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Run() = %v, want ErrAlreadyStarted", err)
	}
	if _, err := o.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("Informer() after Run = %v, want ErrAlreadyStarted", err)
	}
}

func TestInformerShared(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	a, err := o.Informer(informer.Config{GVR: gvr, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := o.Informer(informer.Config{GVR: gvr, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := o.Informer(informer.Config{GVR: gvr, Namespace: "other"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Informer != b.Informer || a.Informer == c.Informer {
		t.Fatalf("same key must share one informer, another namespace must not: a=%p b=%p c=%p", a.Informer, b.Informer, c.Informer)
	}
	if len(o.order) != 2 {
		t.Fatalf("informers created = %d, want 2", len(o.order))
	}
	_, err = o.Informer(informer.Config{GVR: gvr, Namespace: "ns", Transform: func(obj any) (any, error) { return obj, nil }})
	if !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("a second Informer with a Transform: err = %v, want ErrInvalidConfig", err)
	}
}

// TestInformerTypedByObjectType checks that ObjectType without a client
// makes Informer take the typed path on the Operator's REST config (whose
// client checks ObjectType), and that a later call for the same key must
// not set ObjectType.
func TestInformerTypedByObjectType(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := o.Informer(informer.Config{GVR: gvr, Namespace: "bad", ObjectType: (*corev1.ConfigMap)(nil)}); !errors.Is(err, informer.ErrInvalidConfig) || !strings.Contains(err.Error(), "ObjectType must be a non-nil pointer to a struct") {
		t.Fatalf("Informer with a nil ObjectType: err = %v, want the typed client's ErrInvalidConfig", err)
	}
	a, err := o.Informer(informer.Config{GVR: gvr, Namespace: "ns", ObjectType: &corev1.ConfigMap{}})
	if err != nil {
		t.Fatal(err)
	}
	if a.Informer.GVR() != gvr {
		t.Errorf("GVR() = %v, want %v", a.Informer.GVR(), gvr)
	}
	if _, err := o.Informer(informer.Config{GVR: gvr, Namespace: "ns", ObjectType: &corev1.ConfigMap{}}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "must not set RESTConfig, Client, RESTClient, ObjectType or Transform") {
		t.Fatalf("a second Informer with an ObjectType: err = %v, want ErrInvalidConfig", err)
	}
}

// TestInformerNamespaceValidated: an informer of a namespace that no
// object can be in would cache nothing, silently; Informer refuses it on
// both paths (typed and dynamic) and keeps no informer for it.
func TestInformerNamespaceValidated(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, cfg := range []informer.Config{
		{GVR: gvr, Namespace: "My-Namespace", ObjectType: &corev1.ConfigMap{}},
		{GVR: gvr, Namespace: "kube system"},
	} {
		_, err := o.Informer(cfg)
		if want := fmt.Sprintf("informer.Config.Namespace %q is not a namespace", cfg.Namespace); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("Informer(Namespace %q) = %v, want ErrInvalidConfig saying %s", cfg.Namespace, err, want)
		}
	}
	if len(o.order) != 0 {
		t.Fatalf("informers kept = %d, want none", len(o.order))
	}
}

func restConfig() *rest.Config { return &rest.Config{Host: "https://127.0.0.1:1"} }

// recordingHandler records the events a Filter passes on.
type recordingHandler struct{ events []string }

func (r *recordingHandler) OnAdd(obj any, isInInitialList bool) {
	r.events = append(r.events, fmt.Sprintf("add %s initial=%t", resourceVersion(obj), isInInitialList))
}

func (r *recordingHandler) OnUpdate(oldObj, newObj any) {
	r.events = append(r.events, fmt.Sprintf("update %s->%s", resourceVersion(oldObj), resourceVersion(newObj)))
}

func (r *recordingHandler) OnDelete(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		r.events = append(r.events, "delete tombstone "+resourceVersion(d.Obj))
		return
	}
	r.events = append(r.events, "delete "+resourceVersion(obj))
}

// filtered returns a new OwnWrites, a handler it filters for configMaps,
// and want, which fails the test unless the events passed on since the last
// want are events.
func filtered(t *testing.T) (*OwnWrites, cache.ResourceEventHandler, func(step string, events ...string)) {
	w := &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
	rec := &recordingHandler{}
	want := func(step string, events ...string) {
		t.Helper()
		if strings.Join(rec.events, ", ") != strings.Join(events, ", ") {
			t.Fatalf("after %s: passed on [%s], want [%s]", step, strings.Join(rec.events, ", "), strings.Join(events, ", "))
		}
		rec.events = nil
	}
	return w, w.Filter(configMaps, rec), want
}

// TestOwnWritesFilter plays an informer's events through Filter: resyncs
// and the echoes of own writes stop there, foreign changes and deletes pass.
func TestOwnWritesFilter(t *testing.T) {
	w, h, want := filtered(t)

	h.OnAdd(cm("u", "1"), true)
	want("an add from the initial list", "add 1 initial=true")
	h.OnUpdate(cm("u", "1"), cm("u", "1"))
	want("a resync")
	h.OnUpdate(cm("u", "1"), cm("u", "2"))
	want("a foreign change", "update 1->2")

	done := w.Begin(configMaps, "ns", "c")
	h.OnUpdate(cm("u", "2"), cm("u", "3"))
	want("the echo of a write in flight (held)")
	done(cm("u", "3"), nil)
	want("the write's answer")

	w.Begin(configMaps, "ns", "c")(cm("u", "4"), nil)
	h.OnUpdate(cm("u", "3"), cm("u", "4"))
	want("the echo of an answered write")

	done = w.Begin(configMaps, "ns", "c")
	h.OnUpdate(cm("u", "4"), cm("u", "5"))
	want("a foreign change during a write (held)")
	done(cm("u", "6"), nil)
	want("the write's answer", "update 4->5")
	h.OnUpdate(cm("u", "5"), cm("u", "6"))
	want("the echo of that write")

	w.Begin(configMaps, "ns", "c")(cm("v", "7"), nil)
	h.OnAdd(cm("v", "7"), false)
	want("the echo of an own create")

	w.Begin(configMaps, "ns", "c")(cm("v", "8"), nil)
	h.OnDelete(cm("v", "8"))
	want("a delete", "delete 8")
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: cm("v", "8")})
	want("a delete seen as a tombstone", "delete tombstone 8")
	if len(w.echoes) != 0 || len(w.pending) != 0 {
		t.Fatalf("after the delete: echoes %v, pending %v, want none", w.echoes, w.pending)
	}
	h.OnAdd(cm("v", "8"), false)
	want("an add of the deleted object's version (its echo was forgotten)", "add 8 initial=false")
}

// The child resource tells an Operator's OwnWrites of its applies and its
// deletes.
var (
	_ child.Writes       = (*OwnWrites)(nil)
	_ child.DeleteWrites = (*OwnWrites)(nil)
)

// TestOwnWritesFilterDeletes: the delete event of an own delete stops at
// Filter, in either order of event and answer; a failed delete, a foreign
// delete and an announced delete whose event never came do not linger.
func TestOwnWritesFilterDeletes(t *testing.T) {
	w, h, want := filtered(t)

	w.BeginDelete("a")(nil)
	h.OnDelete(cm("a", "1"))
	want("the event of an answered own delete")

	done := w.BeginDelete("b")
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: cm("b", "2")})
	done(nil)
	want("the event (a tombstone) of an own delete before its answer")

	w.BeginDelete("c")(errors.New("conflict"))
	h.OnDelete(cm("c", "3"))
	want("the delete of an object whose own delete failed", "delete 3")

	h.OnDelete(cm("d", "4"))
	want("a foreign delete", "delete 4")

	w.BeginDelete("")(nil)
	h.OnDelete(cm("", "5"))
	want("a delete without a UID", "delete 5")
	if len(w.deletes) != 0 {
		t.Fatalf("announced deletes left: %v", w.deletes)
	}

	// An announced delete whose event never comes is dropped after
	// DeleteEchoTTL, at the next announcement a minute after the last prune.
	w.BeginDelete("e")(nil)
	w.deletes["e"] = announced{at: w.deletes["e"].at.Add(-DeleteEchoTTL - time.Second)}
	w.pruned = w.pruned.Add(-2 * time.Minute)
	w.BeginDelete("f")(nil)
	if _, ok := w.deletes["e"]; ok || len(w.deletes) != 1 {
		t.Fatalf("announced deletes after the prune: %v, want only f", w.deletes)
	}
}

// TestOwnWritesFilterFinalizedDelete: an own delete that finalizers held
// only marked the object; the delete event that comes when the last
// finalizer goes (its final state has a deletionTimestamp) is someone
// else's and passes, however often the object was deleted again while it
// was terminating.
func TestOwnWritesFilterFinalizedDelete(t *testing.T) {
	w, h, want := filtered(t)
	terminating := func(uid, rv string) *corev1.ConfigMap {
		c := cm(uid, rv)
		c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
		return c
	}

	w.BeginDelete("a")(nil)
	h.OnUpdate(cm("a", "1"), terminating("a", "2"))
	want("the own delete marking the object", "update 1->2")
	w.BeginDelete("a")(nil) // deleted again while terminating: no event
	h.OnDelete(terminating("a", "3"))
	want("the delete when the last finalizer went", "delete 3")

	w.BeginDelete("b")(nil)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: terminating("b", "4")})
	want("the delete of a terminating object seen as a tombstone", "delete tombstone 4")
	if len(w.deletes) != 0 {
		t.Fatalf("announced deletes left: %v", w.deletes)
	}
}

// TestOwnWritesFilterEveryHandler: with two handlers filtered for the
// same resource (two Owns, or Owns and Watches, over one informer), the
// echo of an own write and the event of an own delete stop at both,
// whichever sees them first and whether they came before or after the
// answer; a foreign change passes both.
func TestOwnWritesFilterEveryHandler(t *testing.T) {
	w := &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
	rec1, rec2 := &recordingHandler{}, &recordingHandler{}
	h1, h2 := w.Filter(configMaps, rec1), w.Filter(configMaps, rec2)
	want := func(step string, events ...string) {
		t.Helper()
		for i, rec := range []*recordingHandler{rec1, rec2} {
			if strings.Join(rec.events, ", ") != strings.Join(events, ", ") {
				t.Fatalf("after %s: handler %d passed on [%s], want [%s]", step, i+1, strings.Join(rec.events, ", "), strings.Join(events, ", "))
			}
			rec.events = nil
		}
	}

	w.Begin(configMaps, "ns", "c")(cm("u", "2"), nil)
	h1.OnUpdate(cm("u", "1"), cm("u", "2"))
	h2.OnUpdate(cm("u", "1"), cm("u", "2"))
	want("the echo of an answered write")

	done := w.Begin(configMaps, "ns", "c")
	h2.OnUpdate(cm("u", "2"), cm("u", "3"))
	done(cm("u", "3"), nil)
	h1.OnUpdate(cm("u", "2"), cm("u", "3"))
	want("the echo, held at one handler and after the answer at the other")

	h1.OnUpdate(cm("u", "3"), cm("u", "4"))
	h2.OnUpdate(cm("u", "3"), cm("u", "4"))
	want("a foreign change", "update 3->4")

	w.BeginDelete("u")(nil)
	h2.OnDelete(cm("u", "5"))
	h1.OnDelete(cm("u", "5"))
	want("the event of an own delete")
	if len(w.echoes) != 0 || len(w.deletes) != 0 || len(w.pending) != 0 {
		t.Fatalf("left: echoes %v, deletes %v, pending %v", w.echoes, w.deletes, w.pending)
	}
}

// TestOwnsAndWatchesRejectBadArguments: arguments that would make the
// watch wake no owner, or panic, are ErrInvalidConfig saying which.
func TestOwnsAndWatchesRejectBadArguments(t *testing.T) {
	o, f := thingsFramework(t)
	src, err := o.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		call func() error
		want string
	}{
		{"Owns: empty kind", func() error { return o.Owns(f, schema.GroupKind{Group: "example.com"}, src) }, "owner kind must not be empty"},
		{"Owns: group with a version", func() error { return o.Owns(f, schema.GroupKind{Group: "example.com/v1", Kind: "Thing"}, src) }, `owner group "example.com/v1" is not an API group`},
		{"Owns: nil framework", func() error { return o.Owns(nil, schema.GroupKind{Group: "example.com", Kind: "Thing"}, src) }, "must not be nil"},
		{"Owns: nil child", func() error { return o.Owns(f, schema.GroupKind{Group: "example.com", Kind: "Thing"}, nil) }, "must not be nil"},
		{"Watches: nil map function", func() error { return o.Watches(f, src, nil) }, "must not be nil"},
		{"Watches: source not from Informer", func() error { return o.Watches(f, &SharedInformer{}, func(any) []string { return nil }) }, "source holds no informer"},
	} {
		if err := tt.call(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s = %v, want ErrInvalidConfig saying %q", tt.name, err, tt.want)
		}
	}
}

// TestWatchesRejectsANilPredicate: a nil predicate given to Owns or Watches
// is an error naming it, not a panic on the informer's event path at the
// first event.
func TestWatchesRejectsANilPredicate(t *testing.T) {
	o, f := thingsFramework(t)
	src, err := o.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	pass := func(any, any) bool { return true }
	if err := o.Owns(f, schema.GroupKind{Group: "example.com", Kind: "Thing"}, src, nil); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "predicates[0]") {
		t.Errorf("Owns(nil predicate) = %v, want ErrInvalidConfig naming predicates[0]", err)
	}
	if err := o.Watches(f, src, func(any) []string { return nil }, pass, nil); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "predicates[1]") {
		t.Errorf("Watches(pass, nil) = %v, want ErrInvalidConfig naming predicates[1]", err)
	}
	if err := o.Watches(f, src, func(any) []string { return nil }, pass); err != nil {
		t.Errorf("Watches(pass) = %v", err)
	}
}

// TestOwnWritesEchoThatNeverComes: the echo of an answered write that no
// Filter ever sees (the object was created and deleted while the watch was
// down, so the relist shows neither; or no Filter watches its resource) is
// dropped after DeleteEchoTTL instead of staying in memory for ever.
func TestOwnWritesEchoThatNeverComes(t *testing.T) {
	w, h, want := filtered(t)
	clock := time.Now()
	w.now = func() time.Time { return clock }

	// Written (answered), then deleted by someone else while the watch
	// was down: the relist shows nothing of it, no event ever comes.
	w.Begin(configMaps, "ns", "c")(cm("gone", "5"), nil)

	clock = clock.Add(DeleteEchoTTL + 2*time.Minute)
	w.Begin(configMaps, "ns", "c")(cm("v", "7"), nil)
	h.OnAdd(cm("v", "7"), false)
	want("the echo of a later write")
	if len(w.echoes) != 0 {
		t.Fatalf("echoes %d after DeleteEchoTTL, want none: %v", len(w.echoes), w.echoes)
	}
}

// TestWatchesWakesThePreviousOwner: an update that moves a child to
// another owner (another writer changed its controller reference, or a
// relist shows it replaced by another object of its name) wakes the owner
// it had as well; only the new one was woken, and the previous one learnt
// that its child was gone at its next resync.
func TestWatchesWakesThePreviousOwner(t *testing.T) {
	owned := func(owner string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", ResourceVersion: "2"}}
		if owner != "" {
			yes := true
			cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: owner, UID: types.UID(owner), Controller: &yes}}
		}
		return cm
	}
	mapFunc := func(obj any) []string {
		if ref := metav1.GetControllerOfNoCopy(obj.(metav1.Object)); ref != nil {
			return []string{"ns/" + ref.Name}
		}
		return nil
	}
	for _, tt := range []struct {
		name     string
		old, new *corev1.ConfigMap
		want     []string
	}{
		{name: "owner changed", old: owned("a"), new: owned("b"), want: []string{"ns/b", "ns/a"}},
		{name: "owner removed", old: owned("a"), new: owned(""), want: []string{"ns/a"}},
		{name: "same owner", old: owned("a"), new: owned("a"), want: []string{"ns/a"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			watchHandler(func(key string) { got = append(got, key) }, mapFunc, nil).OnUpdate(tt.old, tt.new)
			if !slices.Equal(got, tt.want) {
				t.Errorf("enqueued %q, want %q", got, tt.want)
			}
		})
	}
}

// TestOwnsFindsAClusterScopedOwner: the owner of a namespaced child is the
// object of its name in the child's namespace when the owners' informer
// holds one, else the cluster-scoped object of its name (a Tenant's
// ResourceQuota in the Tenant's Namespace), also of another UID than the
// reference's: the owner created again under that name, which waits for
// its previous one's child to go (TestTenantChildOfThePreviousTenantGoes).
func TestOwnsFindsAClusterScopedOwner(t *testing.T) {
	tenant := func(ns string, uid types.UID) *corev1.ConfigMap { // any object: the informer holds metadata
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "acme", UID: uid}}
	}
	for _, tt := range []struct {
		name   string
		owners *informertest.Informer
		want   bool
	}{
		{"cluster-scoped owner", informertest.New(tenant("", "u1")), true},
		{"cluster-scoped owner created again (another UID)", informertest.New(tenant("", "u2")), true},
		{"owner in the child's namespace", informertest.New(tenant("team-a", "u1"), tenant("", "u1")), false},
		{"no owner", informertest.New(), false},
	} {
		if got := clusterScopedOwner(tt.owners, "team-a/acme", "acme"); got != tt.want {
			t.Errorf("%s: clusterScopedOwner = %v, want %v", tt.name, got, tt.want)
		}
	}
	if clusterScopedOwner(nil, "team-a/acme", "acme") {
		t.Error("clusterScopedOwner(nil informer) = true")
	}
}

// TestWatchesEchoWakesTheOthers: the echo of an own write or delete of a
// child does not wake its controller (the owner whose reconciliation made
// it), but does wake the other objects Watches' map function names for it:
// a second owner that waits for the name to be free, whose wake was lost
// (it was woken only at its next resync). An echo of an object without a
// controller wakes nobody; a foreign change wakes everyone.
func TestWatchesEchoWakesTheOthers(t *testing.T) {
	owned := func(owner, uid, rv string) *corev1.ConfigMap {
		c := cm(uid, rv)
		if owner != "" {
			yes := true
			c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Thing", Name: owner, UID: types.UID(owner), Controller: &yes}}
		}
		return c
	}
	w := &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
	var woken []string
	// Every owner that wants the ConfigMap: a and b in its namespace, and
	// the cluster-scoped c.
	h := w.watch(configMaps, nil, func(key string) { woken = append(woken, key) }, func(any) []string { return []string{"ns/a", "ns/b", "c"} }, nil)
	want := func(step string, keys ...string) {
		t.Helper()
		if !slices.Equal(woken, keys) {
			t.Fatalf("after %s: woke %q, want %q", step, woken, keys)
		}
		woken = nil
	}

	h.OnAdd(owned("a", "u", "1"), false)
	want("a foreign create", "ns/a", "ns/b", "c")

	w.Begin(configMaps, "ns", "c")(owned("a", "u", "2"), nil)
	h.OnUpdate(owned("a", "u", "1"), owned("a", "u", "2"))
	want("the echo of a's answered write", "ns/b", "c")

	done := w.Begin(configMaps, "ns", "c")
	h.OnUpdate(owned("a", "u", "2"), owned("a", "u", "3"))
	want("the echo of a's write in flight (held)")
	done(owned("a", "u", "3"), nil)
	want("the answer of a's write", "ns/b", "c")

	w.BeginDelete("u")(nil)
	h.OnDelete(owned("a", "u", "4"))
	want("the event of a's own delete", "ns/b", "c")

	w.Begin(configMaps, "ns", "c")(owned("c", "v", "5"), nil)
	h.OnAdd(owned("c", "v", "5"), false)
	want("the echo of the cluster-scoped c's create", "ns/a", "ns/b")

	w.BeginDelete("v")(nil)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/c", Obj: owned("c", "v", "6")})
	want("the event of c's own delete, as a tombstone", "ns/a", "ns/b")

	w.Begin(configMaps, "ns", "c")(owned("", "x", "7"), nil)
	h.OnAdd(owned("", "x", "7"), false)
	want("the echo of a write of an object without a controller")

	// Owns' map function names the controller alone: its echoes wake nobody.
	owns := w.watch(configMaps, nil, func(key string) { woken = append(woken, key) }, func(obj any) []string {
		return []string{"ns/" + metav1.GetControllerOfNoCopy(obj.(metav1.Object)).Name}
	}, nil)
	w.Begin(configMaps, "ns", "c")(owned("a", "y", "8"), nil)
	owns.OnAdd(owned("a", "y", "8"), false)
	h.OnAdd(owned("a", "y", "8"), false)
	want("the echo of a's create, at Owns and at the other watch", "ns/b", "c")
}

// TestWatchesEchoSparesTheControllerOnly: the echo of an own write of a
// child spares the key of its controller only when the Framework's
// informer holds the controller itself under it (the reference's UID), or
// nothing: an object of the Framework's that merely has the controller's
// name (of another kind, referring to the child; or an owner created again)
// is woken. The integration test is
// TestReferencesEchoWakesAnObjectOfTheControllersName.
func TestWatchesEchoSparesTheControllerOnly(t *testing.T) {
	yes := true
	child := cm("u", "1")
	child.OwnerReferences = []metav1.OwnerReference{{APIVersion: "example.com/v1", Kind: "Certificate", Name: "web", UID: "cert-uid", Controller: &yes}}
	object := func(ns string, uid types.UID) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: uid}}
	}
	for _, tt := range []struct {
		name   string
		owners *informertest.Informer
		want   []string
	}{
		{"the controller", informertest.New(object("ns", "cert-uid")), nil},
		{"the cluster-scoped controller", informertest.New(object("", "cert-uid")), nil},
		{"no object of the controller's name", informertest.New(), nil},
		{"another object of the controller's name", informertest.New(object("ns", "app-uid")), []string{"ns/web"}},
		{"another cluster-scoped object of the controller's name", informertest.New(object("", "app-uid")), []string{"web"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := &OwnWrites{pending: map[writeKey]*pendingWrite{}, echoes: map[types.UID]echo{}}
			var woken []string
			h := w.watch(configMaps, tt.owners, func(key string) { woken = append(woken, key) }, func(any) []string { return []string{"ns/web", "web"} }, nil)
			w.Begin(configMaps, "ns", "c")(child, nil)
			h.OnAdd(child, false)
			if !slices.Equal(woken, tt.want) {
				t.Errorf("the echo of the Certificate's write of its child woke %q, want %q", woken, tt.want)
			}
		})
	}
}
