package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/internal/statusfields"
	"github.com/operatorkit/operatorkit/trace"
)

// fieldsOf returns the status of u without its conditions and
// observedGeneration.
func fieldsOf(u *unstructured.Unstructured) map[string]any {
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	delete(status, "conditions")
	delete(status, "observedGeneration")
	return status
}

// appliedFields returns the fields, other than the conditions and
// observedGeneration, of each status apply the server received.
func (s *statusServer) appliedFields() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, status := range s.applied {
		var names []string
		for k := range status {
			if k != "conditions" && k != "observedGeneration" {
				names = append(names, k)
			}
		}
		slices.Sort(names)
		out = append(out, names)
	}
	return out
}

// TestStatusFieldsInTheOneApply: fields a resource sets with statuscontext
// are written in the Framework's one status apply, with the conditions and
// observedGeneration, under its field manager; a steady resync writes
// nothing; a changed value is written once.
func TestStatusFieldsInTheOneApply(t *testing.T) {
	var nodes atomic.Value
	nodes.Store([]string{"a-0", "a-1"})
	r := &funcResource{name: "nodes", create: func(ctx context.Context, _ any) error {
		statuscontext.Set(ctx, "nodes", nodes.Load())
		statuscontext.Set(ctx, "endpoint", struct {
			Host string `json:"host"`
			Port int    `json:"port"`
		}{"a.ns.svc", 11211})
		return nil
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	st.traces(t, 1)
	if w := st.server.writeLog(); !slices.Equal(w, []string{"apply status"}) {
		t.Fatalf("writes = %q, want one status apply", w)
	}
	got := st.server.get()
	want := map[string]any{"nodes": []any{"a-0", "a-1"}, "endpoint": map[string]any{"host": "a.ns.svc", "port": int64(11211)}}
	if f := fieldsOf(got); !equalJSON(f, want) {
		t.Errorf("status fields = %v, want %v", f, want)
	}
	if c := meta.FindStatusCondition(conditionsOf(t, got), conditioncontext.Ready); c == nil || c.Status != metav1.ConditionTrue || observedOf(got) != 1 {
		t.Errorf("Ready = %+v, observedGeneration %d; want True and 1 in the same apply", c, observedOf(got))
	}
	if owned := ownedStatusFields(got.GetManagedFields(), "operatorkit-op"); !owned["nodes"] || !owned["endpoint"] {
		t.Errorf("fields owned by the Framework's manager = %v, want nodes and endpoint", owned)
	}

	// Steady: the cache shows the write; a resync writes nothing.
	st.sync(t)
	st.f.Enqueue("ns/a")
	st.traces(t, 2)
	if w := st.server.writeLog(); len(w) != 1 {
		t.Fatalf("writes after a steady reconciliation = %q, want only the first", w)
	}

	// A changed value: one apply, the conditions unchanged in it.
	nodes.Store([]string{"a-0"})
	st.f.Enqueue("ns/a")
	st.traces(t, 3)
	if w := st.server.writeLog(); len(w) != 2 {
		t.Fatalf("writes after a change of nodes = %q, want a second apply", w)
	}
	if f := fieldsOf(st.server.get()); !equalJSON(f["nodes"], []any{"a-0"}) || f["endpoint"] == nil {
		t.Errorf("status fields after the change = %v, want nodes [a-0] and the endpoint", f)
	}
}

// TestStatusFieldsKeptUntilSetAgain: a field set in an earlier
// reconciliation and not in this one (its resource did not run: the chain
// failed before it) is carried over in the Framework's apply, which would
// otherwise remove it; a field set before the failure is written with the
// failure's conditions; nil removes a field the Framework wrote.
func TestStatusFieldsKeptUntilSetAgain(t *testing.T) {
	var phase atomic.Int32
	first := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		switch phase.Load() {
		case 1:
			statuscontext.Set(ctx, "phase", "Failing")
			return errors.New("boom")
		case 2:
			statuscontext.Set(ctx, "phase", nil)
		}
		return nil
	}}
	second := &funcResource{name: "nodes", create: func(ctx context.Context, _ any) error {
		statuscontext.Set(ctx, "nodes", []string{"a-0"})
		if phase.Load() == 0 {
			statuscontext.Set(ctx, "phase", "Running")
		}
		return nil
	}}
	obj := object("a", 1, nil)
	server := newStatusServer(obj)
	server.mapList = true
	st := newStatusTest(t, obj, server, testRouter(t, nil, first, second))
	st.traces(t, 1)

	phase.Store(1)
	st.sync(t)
	st.f.Enqueue("ns/a")
	if tr := st.traces(t, 2)[1]; tr.Result != ResultError {
		t.Fatalf("result = %q, want %q", tr.Result, ResultError)
	}
	got := st.server.get()
	if f := fieldsOf(got); !equalJSON(f, map[string]any{"nodes": []any{"a-0"}, "phase": "Failing"}) {
		t.Errorf("status fields after the failure = %v, want nodes carried over and phase Failing", f)
	}
	if c := meta.FindStatusCondition(conditionsOf(t, got), conditioncontext.Ready); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", c)
	}
	if a := server.appliedFields(); !slices.Equal(a[len(a)-1], []string{"nodes", "phase"}) {
		t.Errorf("fields of the failure's apply = %q, want nodes (carried over) and phase", a[len(a)-1])
	}

	phase.Store(2)
	st.sync(t)
	st.f.Enqueue("ns/a")
	pollUntil(t, "Ready True again", func() bool {
		c := meta.FindStatusCondition(conditionsOf(t, server.get()), conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if f := fieldsOf(server.get()); !equalJSON(f, map[string]any{"nodes": []any{"a-0"}}) {
		t.Errorf("status fields after phase set to nil = %v, want nodes alone", f)
	}
}

// TestStatusFieldsOtherManagersKept: a status field another manager wrote
// is neither carried over in the Framework's apply (which would take it
// from its owner) nor removed by it, and setting it to nil when the
// Framework does not own it writes nothing.
func TestStatusFieldsOtherManagersKept(t *testing.T) {
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		statuscontext.Set(ctx, "foreign", nil)
		return nil
	}}
	obj := object("a", 1, nil)
	obj.Object["status"] = map[string]any{"foreign": "theirs"}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "other", Operation: metav1.ManagedFieldsOperationApply, Subresource: "status",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:foreign":{}}}`)}}})
	st := newStatusTest(t, obj, nil, testRouter(t, nil, r))
	st.traces(t, 1)
	if a := st.server.appliedFields(); len(a) != 1 || len(a[0]) != 0 {
		t.Errorf("fields of the Framework's applies = %q, want one apply without fields", a)
	}
	if f := fieldsOf(st.server.get()); f["foreign"] != "theirs" {
		t.Errorf("status fields = %v, want the other manager's foreign kept", f)
	}
	st.sync(t)
	st.f.Enqueue("ns/a")
	st.traces(t, 2)
	if w := st.server.writeLog(); len(w) != 1 {
		t.Errorf("writes = %q, want only the first: nil for a field of another manager changes nothing", w)
	}
}

// TestInvalidStatusFields: a field the Framework writes itself, and values
// that do not encode to JSON (a MarshalJSON that panics too), are left out
// and fail the reconciliation with a permanent error that names the object
// and the field (Ready False, Stalled True, reason InvalidStatusField); the
// valid field is written; nothing panics.
func TestInvalidStatusFields(t *testing.T) {
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		statuscontext.Set(ctx, "nodes", []string{"a-0"})
		statuscontext.Set(ctx, "conditions", []string{})
		statuscontext.Set(ctx, "ratio", math.Inf(1))
		statuscontext.Set(ctx, "worse", panicsInJSON{})
		return nil
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultPermanent {
		t.Fatalf("result = %q, want %q", tr.Result, ResultPermanent)
	}
	for _, want := range []string{"Thing ns/a", "status.conditions", "status.ratio", "status.worse"} {
		if !strings.Contains(tr.Error, want) {
			t.Errorf("error = %q, want it to name %q", tr.Error, want)
		}
	}
	got := st.server.get()
	conds := conditionsOf(t, got)
	for _, ty := range []string{conditioncontext.Ready, conditioncontext.Stalled} {
		if c := meta.FindStatusCondition(conds, ty); c == nil || c.Reason != ReasonInvalidStatusField {
			t.Errorf("%s = %+v, want reason %s", ty, c, ReasonInvalidStatusField)
		}
	}
	if f := fieldsOf(got); !equalJSON(f, map[string]any{"nodes": []any{"a-0"}}) {
		t.Errorf("status fields = %v, want the valid nodes alone", f)
	}
}

// TestInvalidStatusFieldError: the reconciliation's error matches
// ErrInvalidStatusField (and statuscontext.ErrInvalidField).
func TestInvalidStatusFieldError(t *testing.T) {
	obj := object("a", 1, nil)
	f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}), Client: newStatusServer(obj).client(),
		Resource: thingsGVR, DisableFinalizers: true, Conditions: true})
	if err != nil {
		t.Fatal(err)
	}
	st := f.newStatusRun("ns/a", obj, obj)
	st.fields.Set("observedGeneration", 3)
	ctx := conditioncontext.NewContext(context.Background())
	o := st.finish(ctx, outcome{result: ResultSuccess}, trace.New("ns/a", time.Now()))
	if !errors.Is(o.err, ErrInvalidStatusField) || !errors.Is(o.err, statuscontext.ErrInvalidField) || o.result != ResultPermanent {
		t.Errorf("outcome = %s %v, want a permanent error matching ErrInvalidStatusField", o.result, o.err)
	}
}

type panicsInJSON struct{}

func (panicsInJSON) MarshalJSON() ([]byte, error) { panic("boom") }

// typedWithNodes is a typed object laid out as kubebuilder generates it,
// with a status field of its own.
type typedWithNodes struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
		Nodes              []string           `json:"nodes,omitempty"`
		Endpoint           string             `json:"endpoint,omitempty"`
	} `json:"status,omitempty"`
}

func (o *typedWithNodes) DeepCopyObject() runtime.Object {
	out := *o
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = slices.Clone(o.Status.Conditions)
	out.Status.Nodes = slices.Clone(o.Status.Nodes)
	return &out
}

// TestStatusFieldsOfTypedObject: with a typed cache, a field is compared
// with the Go field of its JSON name: a steady object is not written, also
// when the value set is empty (an empty list the Go type omits); a changed
// one is; and when the cache drops managedFields, the fields the Framework
// owns are learnt from the API server before a write that does not set
// them, and carried over.
func TestStatusFieldsOfTypedObject(t *testing.T) {
	var fail atomic.Bool
	r := &funcResource{name: "nodes", create: func(ctx context.Context, obj any) error {
		if fail.Load() {
			return errors.New("boom")
		}
		statuscontext.Set(ctx, "nodes", []string{})
		statuscontext.Set(ctx, "endpoint", "a.ns.svc")
		return nil
	}}
	steady := &typedWithNodes{}
	steadyMeta(&steady.TypeMeta, &steady.ObjectMeta)
	steady.Status.ObservedGeneration = 1
	steady.Status.Conditions = steadyReady()
	server := newStatusServer(object("a", 1, nil))
	server.mapList = true
	inf := informertest.New(steady)
	f, err := New(Config{
		Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), Client: server.client(), Resource: thingsGVR,
		DisableFinalizers: true, Conditions: true, TracesPerObject: 16,
		BackOffFactory: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	boot(t, f)
	pollUntil(t, "a status write", func() bool { return len(server.writeLog()) == 1 })
	if fields := fieldsOf(server.get()); !equalJSON(fields, map[string]any{"nodes": []any{}, "endpoint": "a.ns.svc"}) {
		t.Fatalf("status fields = %v, want nodes [] and the endpoint", fields)
	}

	// The cache shows the write, as a typed cache decodes it (nodes [] as
	// an empty slice), without managedFields: steady, nothing written.
	next := steady.DeepCopyObject().(*typedWithNodes)
	next.ResourceVersion = server.get().GetResourceVersion()
	next.Status.Nodes, next.Status.Endpoint = []string{}, "a.ns.svc"
	if err := inf.Update(next); err != nil {
		t.Fatal(err)
	}
	f.Enqueue("ns/a")
	pollUntil(t, "a second reconciliation", func() bool { return len(f.Traces("ns/a")) >= 2 })
	if w := server.writeLog(); len(w) != 1 {
		t.Fatalf("writes after a steady reconciliation = %q, want only the first", w)
	}

	// A failure before the field is set: the Framework reads what it owns
	// (the cache has no managedFields) and carries the fields over.
	server.mu.Lock()
	gets := server.gets
	server.mu.Unlock()
	fail.Store(true)
	f.Enqueue("ns/a")
	pollUntil(t, "the failure's write", func() bool { return len(server.writeLog()) == 2 })
	got := server.get()
	if fields := fieldsOf(got); !equalJSON(fields, map[string]any{"nodes": []any{}, "endpoint": "a.ns.svc"}) {
		t.Errorf("status fields after the failure = %v, want both carried over", fields)
	}
	if c := meta.FindStatusCondition(conditionsOf(t, got), conditioncontext.Ready); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("Ready = %+v, want False", c)
	}
	server.mu.Lock()
	gets = server.gets - gets
	server.mu.Unlock()
	if gets != 1 {
		t.Errorf("the Framework read the object %d times, want once (its managedFields) before the failure's write", gets)
	}
}

// steadyMeta makes a typed test object ns/a of kind Thing at generation and
// resourceVersion 1, as the steady objects of these tests are.
func steadyMeta(tm *metav1.TypeMeta, om *metav1.ObjectMeta) {
	tm.APIVersion, tm.Kind = "test.operatorkit.io/v1", "Thing"
	om.Namespace, om.Name, om.Generation, om.ResourceVersion = "ns", "a", 1, "1"
}

// steadyReady is the Ready condition of an object whose generation 1 was
// reconciled with success.
func steadyReady() []metav1.Condition {
	return []metav1.Condition{{Type: conditioncontext.Ready, Status: metav1.ConditionTrue, Reason: ReasonSucceeded,
		Message: readyMessageOf("v1"), ObservedGeneration: 1, LastTransitionTime: metav1.Unix(100, 0)}}
}

// writesOfSteady reconciles steady, cached as it is, three times with r
// (the last once the one before ended: one at a time per object) under a
// Framework with Conditions, and returns the status writes it made.
func writesOfSteady(t *testing.T, steady runtime.Object, r *funcResource) []string {
	t.Helper()
	server := newStatusServer(object("a", 1, nil))
	f, err := New(Config{
		Name: "op", Informer: informertest.New(steady), ResourceRouter: testRouter(t, nil, r), Client: server.client(), Resource: thingsGVR,
		DisableFinalizers: true, Conditions: true, TracesPerObject: 16,
		BackOffFactory: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	boot(t, f)
	for n := int64(2); n <= 3; n++ {
		pollUntil(t, "a reconciliation", func() bool { return r.calls.Load() >= n-1 })
		f.Enqueue("ns/a")
	}
	pollUntil(t, "a third reconciliation", func() bool { return r.calls.Load() >= 3 })
	return server.writeLog()
}

// equalJSON reports whether a and b are equal as decoded JSON.
func equalJSON(a, b any) bool {
	return reflect.DeepEqual(a, b)
}

// TestStatusFieldsWithoutConditions: without Config.Conditions the
// Framework writes no status, and a resource's statuscontext.Set does
// nothing (Get finds nothing), as the package documentation says.
func TestStatusFieldsWithoutConditions(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var found atomic.Bool
	r := &funcResource{name: "nodes", create: func(ctx context.Context, _ any) error {
		statuscontext.Set(ctx, "nodes", []string{"a-0"})
		_, ok := statuscontext.Get(ctx, "nodes")
		found.Store(ok)
		return nil
	}}
	server := newStatusServer(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, r),
		Client: server.client(), Resource: thingsGVR, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "a reconciliation", func() bool { return len(f.Traces("ns/a")) == 1 })
	if tr := f.Traces("ns/a")[0]; tr.Result != ResultSuccess || found.Load() || len(server.writeLog()) != 0 {
		t.Fatalf("result = %s %q, field found %v, writes %q; want a success, no field, nothing written", tr.Result, tr.Error, found.Load(), server.writeLog())
	}
}

// TestStatusFieldsCarriedOverFromAStaleCache: a field the Framework applied
// before and no resource sets now is carried over from the cached object;
// when another writer changed it since (and took it: an update moves the
// field to its manager) and the cache does not show that yet, the apply
// must not write the cached value back over the other writer's, even when
// the object carries the finalizer (an apply without precondition
// otherwise).
func TestStatusFieldsCarriedOverFromAStaleCache(t *testing.T) {
	var phase atomic.Int32
	r := &funcResource{name: "nodes", create: func(ctx context.Context, _ any) error {
		if phase.Load() == 0 {
			statuscontext.Set(ctx, "nodes", []string{"a-0"})
			return nil
		}
		return errors.New("boom") // Ready False: a write, nodes not set
	}}
	obj := object("a", 1, nil)
	server := newStatusServer(obj)
	st := newStatusTest(t, obj, server, testRouter(t, nil, r), func(c *Config) { c.DisableFinalizers = false })
	st.traces(t, 1)
	got := server.get()
	if !slices.Contains(got.GetFinalizers(), st.f.Finalizer()) || !equalJSON(fieldsOf(got)["nodes"], []any{"a-0"}) {
		t.Fatalf("after the first reconciliation: finalizers %q, status fields %v; want the finalizer and nodes [a-0]", got.GetFinalizers(), fieldsOf(got))
	}
	st.sync(t)

	// Another writer updates status.nodes: the field is its own now. The
	// cache does not show it yet.
	server.bump(func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedStringSlice(u.Object, []string{"b-0"}, "status", "nodes")
		var entries []metav1.ManagedFieldsEntry
		for _, e := range u.GetManagedFields() {
			if e.Manager == "operatorkit-op" && e.FieldsV1 != nil {
				e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(strings.Replace(string(e.FieldsV1.Raw), `"f:nodes":{},`, "", 1))}
			}
			entries = append(entries, e)
		}
		entries = append(entries, metav1.ManagedFieldsEntry{Manager: "other", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:nodes":{}}}`)}})
		u.SetManagedFields(entries)
	})
	if owned := ownedStatusFields(server.get().GetManagedFields(), "operatorkit-op"); owned["nodes"] {
		t.Fatalf("test setup: the Framework still owns nodes")
	}

	phase.Store(1)
	st.f.Enqueue("ns/a")
	pollUntil(t, "Ready False written", func() bool {
		c := meta.FindStatusCondition(conditionsOf(t, server.get()), conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	if f := fieldsOf(server.get()); !equalJSON(f["nodes"], []any{"b-0"}) {
		t.Errorf("status.nodes = %v after the Framework's apply from a stale cache, want the other writer's [b-0] kept", f["nodes"])
	}
}

// CommonStatus is a status struct embedded in another, as shared status
// types are: its fields are the status's own in JSON.
type CommonStatus struct {
	ReadyReplicas int32  `json:"readyReplicas,omitempty"`
	Phase         string `json:"phase,omitempty"`
}

// typedWithEmbedded is a typed object whose status embeds CommonStatus.
type typedWithEmbedded struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		CommonStatus       `json:",inline"`
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

func (o *typedWithEmbedded) DeepCopyObject() runtime.Object {
	out := *o
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = slices.Clone(o.Status.Conditions)
	return &out
}

// TestStatusFieldsOfTypedObjectEmbedded: a field of a struct embedded in a
// typed object's status is compared as a field of the status's own is:
// its zero value, which the Go type omits, compares equal to the same
// value set, and a steady object is not written.
func TestStatusFieldsOfTypedObjectEmbedded(t *testing.T) {
	r := &funcResource{name: "replicas", create: func(ctx context.Context, obj any) error {
		statuscontext.Set(ctx, "readyReplicas", 0)
		statuscontext.Set(ctx, "phase", "Running")
		return nil
	}}
	steady := &typedWithEmbedded{}
	steadyMeta(&steady.TypeMeta, &steady.ObjectMeta)
	steady.Status.ObservedGeneration = 1
	steady.Status.Phase = "Running"
	steady.Status.Conditions = steadyReady()
	if w := writesOfSteady(t, steady, r); len(w) != 0 {
		t.Errorf("writes of a steady object = %q, want none: readyReplicas 0 and phase Running are what its status holds", w)
	}
}

// TestRefusedStatusFields: the fields set to a value that the API server's
// answer to the status apply names as refused by the CRD's schema, and no
// other (a field whose name a refused one's starts with, a field set to
// nil, another error).
func TestRefusedStatusFields(t *testing.T) {
	fields := []statusfields.Field{{Name: "node", JSON: "x"}, {Name: "nodes", JSON: []any{"a"}}, {Name: "replicas", JSON: int64(-1)}, {Name: "gone"}}
	undeclared := apierrors.NewInternalError(errors.New("failed to create typed patch object (/g; example.com/v1, Kind=Gizmo): .status.node: field not declared in schema"))
	undeclared.ErrStatus.Message = "failed to create typed patch object (/g; example.com/v1, Kind=Gizmo): .status.node: field not declared in schema"
	nested := apierrors.NewInternalError(errors.New("x"))
	nested.ErrStatus.Message = "failed to create typed patch object (/g; example.com/v1, Kind=Gizmo): .status.nodes[0].host: field not declared in schema"
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "example.com", Kind: "Gizmo"}, "g", field.ErrorList{
		field.Invalid(field.NewPath("status", "replicas"), -1, "should be greater than or equal to 0"),
		field.Invalid(field.NewPath("status", "gone"), nil, "whatever"),
	})
	for _, c := range []struct {
		name string
		err  error
		want []string
	}{
		{"undeclared", fmt.Errorf("write status: %w", undeclared), []string{"node"}},
		{"nested", nested, []string{"nodes"}},
		{"invalid", invalid, []string{"replicas"}},
		{"conflict", apierrors.NewConflict(schema.GroupResource{Resource: "gizmos"}, "g", errors.New(".status.node: modified")), nil},
		{"other", errors.New(".status.node: field not declared in schema"), nil},
	} {
		if got := refusedStatusFields(c.err, fields); !slices.Equal(got, c.want) {
			t.Errorf("%s: refused fields = %q, want %q", c.name, got, c.want)
		}
	}
}

// semver is a status field type whose MarshalJSON has a pointer receiver,
// as encoding/json calls it for a field of an object encoded through its
// pointer (the object as its client sends it and its cache holds it).
type semver struct{ Major, Minor int }

func (v *semver) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%d.%d", v.Major, v.Minor))
}

func (v *semver) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	_, err := fmt.Sscanf(s, "%d.%d", &v.Major, &v.Minor)
	return err
}

// typedWithVersion is a typed object whose status field has the type
// semver.
type typedWithVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
		Version            semver             `json:"version"`
	} `json:"status,omitempty"`
}

func (o *typedWithVersion) DeepCopyObject() runtime.Object {
	out := *o
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = slices.Clone(o.Status.Conditions)
	return &out
}

// TestStatusFieldsOfTypedObjectPointerMarshaler: a typed object's field
// is encoded as the object encodes it, with its type's MarshalJSON also
// when that has a pointer receiver: a steady object is not written.
func TestStatusFieldsOfTypedObjectPointerMarshaler(t *testing.T) {
	r := &funcResource{name: "version", create: func(ctx context.Context, obj any) error {
		statuscontext.Set(ctx, "version", &semver{1, 2})
		return nil
	}}
	steady := &typedWithVersion{}
	steadyMeta(&steady.TypeMeta, &steady.ObjectMeta)
	steady.Status.ObservedGeneration = 1
	steady.Status.Version = semver{1, 2}
	steady.Status.Conditions = steadyReady()
	if data, err := json.Marshal(steady); err != nil || !strings.Contains(string(data), `"version":"1.2"`) {
		t.Fatalf("test setup: the object encodes as %s, %v", data, err)
	}
	if w := writesOfSteady(t, steady, r); len(w) != 0 {
		t.Errorf("writes of a steady object = %q, want none: version 1.2 is what its status holds", w)
	}
}

// typedWithQuoted is a typed object whose status field's tag has the
// option ",string": encoding/json writes its number in a JSON string.
type typedWithQuoted struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
		Capacity           int64              `json:"capacity,string,omitempty"`
	} `json:"status,omitempty"`
}

func (o *typedWithQuoted) DeepCopyObject() runtime.Object {
	out := *o
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = slices.Clone(o.Status.Conditions)
	return &out
}

// TestStatusFieldsOfTypedObjectQuoted: a typed object's field whose tag
// has ",string" is compared as the object encodes it, a JSON string: the
// same value set (as its string) writes nothing.
func TestStatusFieldsOfTypedObjectQuoted(t *testing.T) {
	r := &funcResource{name: "capacity", create: func(ctx context.Context, obj any) error {
		statuscontext.Set(ctx, "capacity", "1024")
		return nil
	}}
	steady := &typedWithQuoted{}
	steadyMeta(&steady.TypeMeta, &steady.ObjectMeta)
	steady.Status.ObservedGeneration = 1
	steady.Status.Capacity = 1024
	steady.Status.Conditions = steadyReady()
	if data, err := json.Marshal(steady); err != nil || !strings.Contains(string(data), `"capacity":"1024"`) {
		t.Fatalf("test setup: the object encodes as %s, %v", data, err)
	}
	if w := writesOfSteady(t, steady, r); len(w) != 0 {
		t.Errorf("writes of a steady object = %q, want none: capacity \"1024\" is what its status holds", w)
	}
}

// foreignManaged returns managedFields by which manager applied the
// top-level status fields names.
func foreignManaged(manager string, names ...string) []metav1.ManagedFieldsEntry {
	var fields []string
	for _, n := range names {
		fields = append(fields, `"f:`+n+`":{}`)
	}
	return []metav1.ManagedFieldsEntry{{Manager: manager, Operation: metav1.ManagedFieldsOperationApply, Subresource: "status",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{` + strings.Join(fields, ",") + `}}`)}}}
}

// flipping returns a resource that fails in every other reconciliation,
// the first one included: each reconciliation changes the conditions, and
// writes the status.
func flipping() *funcResource {
	var n atomic.Int32
	return &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		if n.Add(1)%2 == 1 {
			return errors.New("boom")
		}
		return nil
	}}
}

// reconcileStripped runs reconciliations from..to of st's object, each
// from the server's latest object without its managedFields (as the
// Operator's informers cache it).
func (st *statusTest) reconcileStripped(t *testing.T, from, to int) {
	t.Helper()
	for i := from; i <= to; i++ {
		if i > 1 {
			stripped := st.server.get()
			stripped.SetManagedFields(nil)
			if err := st.inf.Update(stripped); err != nil {
				t.Fatal(err)
			}
			st.f.Enqueue("ns/a")
		}
		st.traces(t, i)
	}
}

// TestStatusWritesReadOnceForAnotherWritersField: with a cache that drops
// managedFields, an object whose status holds another writer's field, and
// resources that set no field, the Framework reads the object once, before
// its first write (it cannot tell whether the field is its own, applied by
// an earlier process), and not before the writes after it: the answer to
// its own apply told it owns no field.
func TestStatusWritesReadOnceForAnotherWritersField(t *testing.T) {
	obj := object("a", 1, nil)
	obj.Object["status"] = map[string]any{"foreign": "theirs"}
	obj.SetManagedFields(foreignManaged("other", "foreign"))
	server := newStatusServer(obj)
	server.mapList = true
	cached := obj.DeepCopy()
	cached.SetManagedFields(nil)
	st := newStatusTest(t, cached, server, testRouter(t, nil, flipping()))
	st.reconcileStripped(t, 1, 7)
	if w := server.writeLog(); len(w) != 7 {
		t.Fatalf("writes = %q, want 7 status applies", w)
	}
	server.mu.Lock()
	gets := server.gets
	server.mu.Unlock()
	if gets != 1 {
		t.Errorf("the Framework read the object %d times for 7 status writes; want 1, before the first", gets)
	}
	if a := server.appliedFields(); slices.ContainsFunc(a, func(f []string) bool { return len(f) > 0 }) {
		t.Errorf("fields of the Framework's applies = %q, want none: foreign is another manager's", a)
	}
	if f := fieldsOf(server.get()); f["foreign"] != "theirs" {
		t.Errorf("status fields = %v, want the other manager's foreign kept", f)
	}
}

// TestStatusFieldsOfAnEarlierProcessKept: a field the Framework's field
// manager applied before this process started (an earlier process, or
// release, that set it), on an object cached without managedFields, is
// carried over by a Framework whose resources never set it, in each of its
// writes.
func TestStatusFieldsOfAnEarlierProcessKept(t *testing.T) {
	obj := object("a", 1, nil)
	obj.Object["status"] = map[string]any{"phase": "Running", "foreign": "theirs"}
	obj.SetManagedFields(append(foreignManaged("operatorkit-op", "phase"), foreignManaged("other", "foreign")...))
	server := newStatusServer(obj)
	server.mapList = true
	cached := obj.DeepCopy()
	cached.SetManagedFields(nil)
	st := newStatusTest(t, cached, server, testRouter(t, nil, flipping()))
	st.reconcileStripped(t, 1, 4)
	if w := server.writeLog(); len(w) != 4 {
		t.Fatalf("writes = %q, want 4 status applies", w)
	}
	for i, f := range server.appliedFields() {
		if !slices.Equal(f, []string{"phase"}) {
			t.Errorf("fields of apply %d = %q, want phase carried over", i+1, f)
		}
	}
	got := server.get()
	if f := fieldsOf(got); !equalJSON(f, map[string]any{"phase": "Running", "foreign": "theirs"}) {
		t.Errorf("status fields = %v, want phase (the Framework's, from an earlier process) and foreign kept", f)
	}
	if owned := ownedStatusFields(got.GetManagedFields(), "operatorkit-op"); !owned["phase"] {
		t.Errorf("fields owned by the Framework's manager = %v, want phase", owned)
	}
}

// TestStatusFieldsKeptOnceSetWithoutManagedFields: with a cache that drops
// managedFields, a Framework that knows it owns no field (its earlier
// applies said so) and then sets one carries it over in the writes that
// do not set it: its apply of the field ends what it knew, and each write
// after it reads managedFields again.
func TestStatusFieldsKeptOnceSetWithoutManagedFields(t *testing.T) {
	var n atomic.Int32
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		i := n.Add(1)
		if i == 3 {
			statuscontext.Set(ctx, "phase", "Running")
		}
		if i%2 == 1 {
			return errors.New("boom")
		}
		return nil
	}}
	obj := object("a", 1, nil)
	obj.Object["status"] = map[string]any{"foreign": "theirs"}
	obj.SetManagedFields(foreignManaged("other", "foreign"))
	server := newStatusServer(obj)
	server.mapList = true
	cached := obj.DeepCopy()
	cached.SetManagedFields(nil)
	st := newStatusTest(t, cached, server, testRouter(t, nil, r))
	st.reconcileStripped(t, 1, 5)
	want := [][]string{nil, nil, {"phase"}, {"phase"}, {"phase"}}
	if a := server.appliedFields(); !slices.EqualFunc(a, want, slices.Equal) {
		t.Errorf("fields of the Framework's applies = %q, want %q", a, want)
	}
	if f := fieldsOf(server.get()); !equalJSON(f, map[string]any{"phase": "Running", "foreign": "theirs"}) {
		t.Errorf("status fields = %v, want phase carried over and foreign kept", f)
	}
	server.mu.Lock()
	defer server.mu.Unlock()
	if server.gets != 3 {
		t.Errorf("the Framework read the object %d times; want 3: before its first write, and before each write once it owns phase", server.gets)
	}
}
