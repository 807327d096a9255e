package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"go.uber.org/goleak"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/internal/statusfields"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

var thingsGVR = schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}

// statusServer is an in-memory API server for one object of thingsGVR,
// behind client-go's fake dynamic client: get, JSON merge patches and
// server-side apply of the status subresource (both with the
// metadata.resourceVersion precondition, when given), with a
// resourceVersion that grows with each write.
// Apply merges status.conditions whole (an atomic list) or, with mapList,
// per type, and then records the manager's entries in managedFields as the
// API server does.
type statusServer struct {
	mu       sync.Mutex
	obj      *unstructured.Unstructured
	mapList  bool
	noStatus bool // the CRD has no status subresource: 404 on status
	writes   []string
	applied  []map[string]any // the status of each apply
	gets     int
	kinds    []string // the apiVersion and kind of each apply
}

func newStatusServer(obj *unstructured.Unstructured) *statusServer {
	return &statusServer{obj: obj.DeepCopy()}
}

func (s *statusServer) client() *dynamicfake.FakeDynamicClient {
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{thingsGVR: "ThingList"})
	dc.PrependReactor("*", "*", s.react)
	return dc
}

func (s *statusServer) react(action clienttesting.Action) (bool, runtime.Object, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gr := thingsGVR.GroupResource()
	name := s.obj.GetName()
	if action.GetVerb() == "get" {
		s.gets++
		return true, s.obj.DeepCopy(), nil
	}
	switch a := action.(type) {
	case clienttesting.PatchActionImpl:
		if a.GetSubresource() == "status" && s.noStatus {
			return true, nil, apierrors.NewNotFound(gr, name)
		}
		var patch map[string]any
		if err := json.Unmarshal(a.GetPatch(), &patch); err != nil {
			return true, nil, apierrors.NewBadRequest(err.Error())
		}
		if rv, _, _ := unstructured.NestedString(patch, "metadata", "resourceVersion"); rv != "" && rv != s.obj.GetResourceVersion() {
			return true, nil, apierrors.NewConflict(gr, name, errors.New("the object has been modified"))
		}
		switch a.GetPatchType() {
		case types.MergePatchType:
			if a.GetSubresource() == "status" {
				patch = map[string]any{"status": patch["status"]}
			}
			s.obj.Object = mergePatch(s.obj.Object, patch).(map[string]any)
			s.writes = append(s.writes, "merge "+a.GetSubresource())
		case types.ApplyPatchType:
			status, _ := patch["status"].(map[string]any)
			s.kinds = append(s.kinds, fmt.Sprint(patch["apiVersion"], " ", patch["kind"]))
			s.apply(a.PatchOptions.FieldManager, status)
			s.writes = append(s.writes, "apply "+a.GetSubresource())
		default:
			return true, nil, apierrors.NewBadRequest("unsupported patch type " + string(a.GetPatchType()))
		}
		rv, _ := strconv.Atoi(s.obj.GetResourceVersion())
		s.obj.SetResourceVersion(strconv.Itoa(rv + 1))
		return true, s.obj.DeepCopy(), nil
	}
	return true, nil, fmt.Errorf("statusServer: unexpected %s", action.GetVerb())
}

// apply applies status for manager: observedGeneration, and conditions
// whole or per type.
func (s *statusServer) apply(manager string, status map[string]any) {
	s.applied = append(s.applied, runtime.DeepCopyJSON(status))
	if og, ok := status["observedGeneration"].(float64); ok { // JSON numbers
		_ = unstructured.SetNestedField(s.obj.Object, int64(og), "status", "observedGeneration")
	}
	fields := s.applyFields(manager, status)
	applied, _ := status["conditions"].([]any)
	if !s.mapList {
		_ = unstructured.SetNestedSlice(s.obj.Object, applied, "status", "conditions")
		s.setManaged(manager, `{"f:status":{`+fields+`"f:conditions":{},"f:observedGeneration":{}}}`)
		return
	}
	current, _, _ := unstructured.NestedSlice(s.obj.Object, "status", "conditions")
	typeOf := func(c any) string { return c.(map[string]any)["type"].(string) }
	previously := s.owned(manager)
	now := map[string]bool{}
	for _, c := range applied {
		now[typeOf(c)] = true
	}
	var out []any
	for _, c := range current {
		t := typeOf(c)
		switch {
		case now[t]:
			i := slices.IndexFunc(applied, func(a any) bool { return typeOf(a) == t })
			out = append(out, applied[i])
			delete(now, t)
		case previously[t]: // applied before, omitted now: removed
		default:
			out = append(out, c)
		}
	}
	for _, c := range applied {
		if now[typeOf(c)] {
			out = append(out, c)
		}
	}
	_ = unstructured.SetNestedSlice(s.obj.Object, out, "status", "conditions")
	var keys []string
	for _, c := range applied {
		keys = append(keys, fmt.Sprintf(`"k:{\"type\":\"%s\"}":{}`, typeOf(c)))
	}
	s.setManaged(manager, `{"f:status":{`+fields+`"f:conditions":{`+strings.Join(keys, ",")+`},"f:observedGeneration":{}}}`)
}

// applyFields applies the status fields other than the conditions and
// observedGeneration for manager: those in status are set, those it applied
// before and leaves out now are removed (as server-side apply removes the
// fields a manager no longer applies, when no other manager has them). It
// returns their managedFields entries, each followed by a comma.
func (s *statusServer) applyFields(manager string, status map[string]any) string {
	var managed strings.Builder
	for _, name := range slices.Sorted(maps.Keys(ownedStatusFields(s.obj.GetManagedFields(), manager))) {
		if _, ok := status[name]; !ok {
			unstructured.RemoveNestedField(s.obj.Object, "status", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(status)) {
		if name == "conditions" || name == "observedGeneration" {
			continue
		}
		data, _ := json.Marshal(status[name])
		v, _ := statusfields.Decode(data) // as the API server stores it: int64 where integral
		if s.obj.Object["status"] == nil {
			s.obj.Object["status"] = map[string]any{}
		}
		s.obj.Object["status"].(map[string]any)[name] = v
		fmt.Fprintf(&managed, `"f:%s":{},`, name)
	}
	return managed.String()
}

func (s *statusServer) owned(manager string) map[string]bool {
	return ownedConditionTypes(s.obj.GetManagedFields(), manager)
}

func (s *statusServer) setManaged(manager, fields string) {
	entries := slices.DeleteFunc(s.obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply
	})
	entries = append(entries, metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationApply,
		Subresource: "status", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}})
	s.obj.SetManagedFields(entries)
}

// get returns a copy of the object as the server has it.
func (s *statusServer) get() *unstructured.Unstructured {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.obj.DeepCopy()
}

func (s *statusServer) writeLog() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.writes)
}

// bump changes the object on the server as another writer would.
func (s *statusServer) bump(change func(u *unstructured.Unstructured)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change(s.obj)
	rv, _ := strconv.Atoi(s.obj.GetResourceVersion())
	s.obj.SetResourceVersion(strconv.Itoa(rv + 1))
}

// mergePatch applies a JSON merge patch (RFC 7386).
func mergePatch(target, patch any) any {
	p, ok := patch.(map[string]any)
	if !ok {
		return patch
	}
	t, ok := target.(map[string]any)
	if !ok {
		t = map[string]any{}
	}
	out := maps.Clone(t)
	for k, v := range p {
		if v == nil {
			delete(out, k)
			continue
		}
		out[k] = mergePatch(out[k], v)
	}
	return out
}

func conditionsOf(t *testing.T, u *unstructured.Unstructured) []metav1.Condition {
	t.Helper()
	conds, _, err := readStatus(u)
	if err != nil {
		t.Fatal(err)
	}
	return conds
}

func observedOf(u *unstructured.Unstructured) int64 {
	og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	return og
}

// statusTest is a Framework with Conditions over one object served by a
// statusServer.
type statusTest struct {
	f      *Framework
	inf    *informertest.Informer
	server *statusServer
	events *record.FakeRecorder
}

func newStatusTest(t *testing.T, obj *unstructured.Unstructured, server *statusServer, rt *router.Router, configure ...func(*Config)) *statusTest {
	t.Helper()
	return newStatusTestClock(t, obj, server, rt, nil, configure...)
}

// newStatusTestClock is newStatusTest with the Framework's clock now, when
// not nil.
func newStatusTestClock(t *testing.T, obj *unstructured.Unstructured, server *statusServer, rt *router.Router, now func() time.Time, configure ...func(*Config)) *statusTest {
	t.Helper()
	t.Cleanup(func() { goleak.VerifyNone(t) })
	if server == nil {
		server = newStatusServer(obj)
	}
	st := &statusTest{inf: informertest.New(obj), server: server, events: record.NewFakeRecorder(100)}
	config := Config{
		Name: "op", Informer: st.inf, ResourceRouter: rt, Client: server.client(), Resource: thingsGVR,
		DisableFinalizers: true, Conditions: true, EventRecorder: st.events, TracesPerObject: 16,
		BackOffFactory: func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) },
	}
	for _, c := range configure {
		c(&config)
	}
	f, err := New(config)
	if err != nil {
		t.Fatal(err)
	}
	if now != nil {
		f.state.now = now
	}
	st.f = f
	boot(t, f)
	return st
}

// traces waits until the object has n traces and returns them.
func (st *statusTest) traces(t *testing.T, n int) []trace.Trace {
	t.Helper()
	key := "ns/a"
	pollUntil(t, fmt.Sprintf("%d reconciliations", n), func() bool { return len(st.f.Traces(key)) >= n })
	return st.f.Traces(key)
}

// sync delivers the server's object to the informer, as a watch would.
func (st *statusTest) sync(t *testing.T) {
	t.Helper()
	if err := st.inf.Update(st.server.get()); err != nil {
		t.Fatal(err)
	}
}

func (st *statusTest) drainEvents() []string {
	var out []string
	for {
		select {
		case e := <-st.events.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

type wantCondition struct {
	status metav1.ConditionStatus
	reason string
}

// TestConditionsByOutcome: the Framework's conditions for each outcome of
// a reconciliation, written once at its end with observedGeneration.
func TestConditionsByOutcome(t *testing.T) {
	absent := wantCondition{}
	tests := []struct {
		name        string
		create      func(ctx context.Context, obj any) error
		handles     func(any) bool
		ready       wantCondition
		reconciling wantCondition
		stalled     wantCondition
		result      string
	}{{
		name:   "success",
		ready:  wantCondition{metav1.ConditionTrue, ReasonSucceeded},
		result: ResultSuccess,
	}, {
		name: "requeue",
		create: func(ctx context.Context, _ any) error {
			requeuecontext.SetRequeueAfter(ctx, time.Hour)
			return nil
		},
		ready:  wantCondition{metav1.ConditionTrue, ReasonSucceeded},
		result: ResultRequeue,
	}, {
		name: "canceled",
		create: func(ctx context.Context, _ any) error {
			reconciliationcanceledcontext.SetCanceled(ctx)
			return nil
		},
		ready:  wantCondition{metav1.ConditionTrue, ReasonSucceeded},
		result: ResultSuccess,
	}, {
		name:        "error",
		create:      func(context.Context, any) error { return errors.New("boom") },
		ready:       wantCondition{metav1.ConditionFalse, "MyDbEnsureCreatedFailed"},
		reconciling: wantCondition{metav1.ConditionTrue, ReasonProgressingWithRetry},
		result:      ResultError,
	}, {
		name:        "panic",
		create:      func(context.Context, any) error { panic("oops") },
		ready:       wantCondition{metav1.ConditionFalse, "MyDbEnsureCreatedFailed"},
		reconciling: wantCondition{metav1.ConditionTrue, ReasonProgressingWithRetry},
		result:      ResultPanic,
	}, {
		name:    "permanent error",
		create:  func(context.Context, any) error { return retry.Permanent(errors.New("bad spec")) },
		ready:   wantCondition{metav1.ConditionFalse, "MyDbEnsureCreatedFailed"},
		stalled: wantCondition{metav1.ConditionTrue, "MyDbEnsureCreatedFailed"},
		result:  ResultPermanent,
	}, {
		name:    "no resource set",
		handles: func(any) bool { return false },
		ready:   wantCondition{metav1.ConditionFalse, ReasonNoResourceSet},
		stalled: wantCondition{metav1.ConditionTrue, ReasonNoResourceSet},
		result:  ResultNoResourceSet,
	}, {
		name: "child not ready",
		create: func(ctx context.Context, _ any) error {
			conditioncontext.Set(ctx, conditioncontext.Reconciling, metav1.ConditionTrue, "DeploymentNotReady", "1 of 3 replicas")
			requeuecontext.SetRequeueAfter(ctx, time.Hour)
			return nil
		},
		ready:       wantCondition{metav1.ConditionFalse, "DeploymentNotReady"},
		reconciling: wantCondition{metav1.ConditionTrue, "DeploymentNotReady"},
		result:      ResultRequeue,
	}, {
		name: "resource gives up",
		create: func(ctx context.Context, _ any) error {
			conditioncontext.Set(ctx, conditioncontext.Stalled, metav1.ConditionTrue, "QuotaExceeded", "")
			return nil
		},
		ready:   wantCondition{metav1.ConditionFalse, "QuotaExceeded"},
		stalled: wantCondition{metav1.ConditionTrue, "QuotaExceeded"},
		result:  ResultSuccess,
	}, {
		name: "invalid condition",
		create: func(ctx context.Context, _ any) error {
			conditioncontext.Set(ctx, "not a name!", metav1.ConditionTrue, "Fine", "")
			return nil
		},
		ready:   wantCondition{metav1.ConditionFalse, ReasonInvalidCondition},
		stalled: wantCondition{metav1.ConditionTrue, ReasonInvalidCondition},
		result:  ResultPermanent,
	}, {
		name: "invalid reason",
		create: func(ctx context.Context, _ any) error {
			conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "not a reason", "")
			return nil
		},
		ready:   wantCondition{metav1.ConditionFalse, ReasonInvalidCondition},
		stalled: wantCondition{metav1.ConditionTrue, ReasonInvalidCondition},
		result:  ResultPermanent,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obj := object("a", 3, nil)
			r := &funcResource{name: "my-db", create: tt.create}
			st := newStatusTest(t, obj, nil, testRouter(t, tt.handles, r))
			tr := st.traces(t, 1)[0]
			if tr.Result != tt.result {
				t.Fatalf("result = %q (%s), want %q", tr.Result, tr.Error, tt.result)
			}
			if w := st.server.writeLog(); !slices.Equal(w, []string{"apply status"}) {
				t.Fatalf("writes = %q, want one status apply", w)
			}
			got := st.server.get()
			conds := conditionsOf(t, got)
			for ty, want := range map[string]wantCondition{
				conditioncontext.Ready: tt.ready, conditioncontext.Reconciling: tt.reconciling, conditioncontext.Stalled: tt.stalled,
			} {
				c := meta.FindStatusCondition(conds, ty)
				switch {
				case want == absent && c != nil:
					t.Errorf("%s = %+v, want absent", ty, c)
				case want != absent && (c == nil || c.Status != want.status || c.Reason != want.reason):
					t.Errorf("%s = %+v, want %s %s", ty, c, want.status, want.reason)
				case c != nil && (c.ObservedGeneration != 3 || c.LastTransitionTime.IsZero()):
					t.Errorf("%s = %+v, want observedGeneration 3 and a lastTransitionTime", ty, c)
				}
			}
			if og := observedOf(got); og != 3 {
				t.Errorf("status.observedGeneration = %d, want 3", og)
			}
			if slices.ContainsFunc(conds, func(c metav1.Condition) bool { return !isFrameworkType(c.Type) }) {
				t.Errorf("conditions = %+v, want the Framework's only", conds)
			}
		})
	}
}

// TestInvalidConditionNamesObjectAndField: the permanent error of an invalid
// condition names the object and the field, and matches
// ErrInvalidCondition.
func TestInvalidConditionNamesObjectAndField(t *testing.T) {
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Fine", "")
		conditioncontext.Set(ctx, "bad type!", "Maybe", "Fine", "")
		return nil
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	for _, want := range []string{"Thing ns/a", "status.conditions[bad type!].type", "status.conditions[bad type!].status"} {
		if !strings.Contains(tr.Error, want) {
			t.Errorf("error = %q, want it to name %q", tr.Error, want)
		}
	}
	if c := meta.FindStatusCondition(conditionsOf(t, st.server.get()), "DatabaseReady"); c == nil {
		t.Errorf("the valid condition was not written with the invalid one left out")
	}
}

// TestConditionsWriteOnlyOnChange: an unchanged status is not written
// again; a new generation with the same outcome is, keeping
// lastTransitionTime; a changed outcome records one event per changed
// condition, a steady one none.
func TestConditionsWriteOnlyOnChange(t *testing.T) {
	var failing atomic.Bool
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Provisioned", "")
		if failing.Load() {
			return errors.New("boom")
		}
		return nil
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	st.traces(t, 1)
	first := meta.FindStatusCondition(conditionsOf(t, st.server.get()), conditioncontext.Ready)
	// Conditions that appear in their good state are the expected path:
	// no event.
	if got := st.drainEvents(); len(got) != 0 {
		t.Errorf("events of the first, successful reconciliation = %q, want none", got)
	}

	// Steady: the cache shows the write; a resync changes nothing.
	st.sync(t)
	st.f.Enqueue("ns/a")
	st.traces(t, 2)
	if w := st.server.writeLog(); len(w) != 1 {
		t.Fatalf("writes after a steady reconciliation = %q, want only the first", w)
	}
	if got := st.drainEvents(); len(got) != 0 {
		t.Errorf("events of a steady reconciliation = %q, want none", got)
	}

	// A new generation, same outcome: written, lastTransitionTime kept.
	st.server.bump(func(u *unstructured.Unstructured) { u.SetGeneration(2) })
	st.sync(t)
	st.traces(t, 3)
	got := st.server.get()
	ready := meta.FindStatusCondition(conditionsOf(t, got), conditioncontext.Ready)
	if observedOf(got) != 2 || ready.ObservedGeneration != 2 || !ready.LastTransitionTime.Equal(&first.LastTransitionTime) {
		t.Errorf("after generation 2: observedGeneration %d, Ready %+v; want 2 and lastTransitionTime %s", observedOf(got), ready, first.LastTransitionTime)
	}
	if got := st.drainEvents(); len(got) != 0 {
		t.Errorf("events of a reconciliation with the same outcome = %q, want none", got)
	}

	// A failure: Ready and Reconciling change, DatabaseReady does not.
	failing.Store(true)
	st.sync(t)
	st.f.Enqueue("ns/a")
	st.traces(t, 4)
	wantEvents := []string{
		"Warning DbEnsureCreatedFailed Ready is False: ensure created db: boom",
		"Normal " + ReasonProgressingWithRetry + " Reconciling is True: ensure created db: boom",
		"Warning ReconcileFailed ensure created db: boom", // the Framework's failure event, as without Conditions
	}
	var events []string
	pollUntil(t, "the failure's events", func() bool {
		events = append(events, st.drainEvents()...)
		return len(events) >= len(wantEvents)
	})
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events of the failure = %q, want %q", events, wantEvents)
	}

	// The recovery: Ready turns True again (Reconciling is left out).
	failing.Store(false)
	st.sync(t)
	st.f.Enqueue("ns/a")
	wantEvents = []string{
		"Normal " + ReasonSucceeded + " Ready is True: reconciled by resource set v1",
		"Normal Recovered reconciled successfully after earlier failures",
	}
	events = nil
	pollUntil(t, "the recovery's events", func() bool {
		events = append(events, st.drainEvents()...)
		return len(events) >= len(wantEvents)
	})
	if !slices.Equal(events, wantEvents) {
		t.Errorf("events of the recovery = %q, want %q", events, wantEvents)
	}
}

// TestConditionsMapList: with status.conditions a map list keyed by type,
// the Framework applies only the conditions it owns: another manager's stay
// out of its apply, a resource condition it applied before is carried over,
// and Reconciling, once no longer True, is left out (and so removed).
func TestConditionsMapList(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		if fail.Load() {
			conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionFalse, "Provisioning", "")
			return errors.New("boom")
		}
		return nil
	}}
	obj := object("a", 1, nil)
	obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Foreign", "status": "True", "reason": "Other", "message": "", "lastTransitionTime": "2020-01-01T00:00:00Z",
	}}}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "other", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"Foreign\"}":{}}}}`)}}})
	server := newStatusServer(obj)
	server.mapList = true
	st := newStatusTest(t, obj, server, testRouter(t, nil, r), func(c *Config) {
		c.BackOffFactory = func() backoff.BackOff { return backoff.NewConstantBackOff(time.Millisecond) }
	})
	st.traces(t, 1)
	typesOf := func(status map[string]any) []string {
		var out []string
		for _, c := range status["conditions"].([]any) {
			out = append(out, c.(map[string]any)["type"].(string))
		}
		return out
	}
	if got := typesOf(server.applied[0]); !slices.Equal(got, []string{"Ready", "Reconciling", "DatabaseReady"}) {
		t.Errorf("first apply = %q, want the Framework's conditions only", got)
	}
	fail.Store(false)
	st.sync(t)
	pollUntil(t, "a success", func() bool {
		c := meta.FindStatusCondition(conditionsOf(t, server.get()), conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionTrue
	})
	server.mu.Lock()
	last := server.applied[len(server.applied)-1]
	server.mu.Unlock()
	if got := typesOf(last); !slices.Equal(got, []string{"Ready", "DatabaseReady"}) {
		t.Errorf("apply after the fix = %q, want Ready and the carried-over DatabaseReady (Reconciling left out)", got)
	}
	var got []string
	for _, c := range conditionsOf(t, server.get()) {
		got = append(got, c.Type+"="+string(c.Status))
	}
	if want := []string{"Foreign=True", "Ready=True", "DatabaseReady=False"}; !slices.Equal(got, want) {
		t.Errorf("conditions = %q, want %q", got, want)
	}
}

// TestConditionsAtomicListKeepsOthers: with an atomic list the Framework
// writes the whole list, keeping other writers' conditions.
func TestConditionsAtomicListKeepsOthers(t *testing.T) {
	obj := object("a", 1, nil)
	obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
		"type": "Foreign", "status": "True", "reason": "Other", "message": "", "lastTransitionTime": "2020-01-01T00:00:00Z",
	}}}
	obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: "other", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status",
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{}}}`)}}})
	st := newStatusTest(t, obj, nil, testRouter(t, nil, &funcResource{name: "r"}))
	st.traces(t, 1)
	var got []string
	for _, c := range conditionsOf(t, st.server.get()) {
		got = append(got, c.Type)
	}
	if want := []string{"Foreign", "Ready"}; !slices.Equal(got, want) {
		t.Errorf("conditions = %q, want %q", got, want)
	}
}

// TestConditionsNoStatusSubresource: a 404 on the status subresource of an
// object that exists is a permanent error naming the object.
func TestConditionsNoStatusSubresource(t *testing.T) {
	server := newStatusServer(object("a", 1, nil))
	server.noStatus = true
	st := newStatusTest(t, object("a", 1, nil), server, testRouter(t, nil, &funcResource{name: "r"}))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultPermanent || !strings.Contains(tr.Error, "no status subresource") || !strings.Contains(tr.Error, "Thing ns/a") {
		t.Fatalf("result = %s %q, want a permanent error naming the object and the subresource", tr.Result, tr.Error)
	}
	if !hasFrameworkStep(tr, StepWriteStatus, trace.OutcomeError) {
		t.Errorf("steps = %+v, want the failed status write", tr.Steps)
	}
}

func hasFrameworkStep(tr trace.Trace, step string, outcome trace.Outcome) bool {
	return slices.ContainsFunc(tr.Steps, func(s trace.Step) bool { return s.Resource == "framework" && s.Step == step && s.Outcome == outcome })
}

// TestStatusWriteIsExpected: the status write's resourceVersion feeds the
// own-write expectations: a reconciliation woken before the cache shows it
// is deferred.
func TestStatusWriteIsExpected(t *testing.T) {
	r := &funcResource{name: "r"}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	st.traces(t, 1)
	st.f.Enqueue("ns/a") // the cache still shows resourceVersion 1
	if tr := st.traces(t, 2)[1]; tr.Result != ResultStale {
		t.Fatalf("second reconciliation = %q, want %q", tr.Result, ResultStale)
	}
	st.sync(t)
	pollUntil(t, "the reconciliation once the cache shows the write", func() bool { return r.calls.Load() == 2 })
}

// guarded is a resource that creates something outside Kubernetes under
// the condition DatabaseReady, unless the condition is True.
func guarded(creates *atomic.Int64, before func()) *funcResource {
	return &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		if c, ok := conditioncontext.Get(ctx, "DatabaseReady"); ok && c.Status == metav1.ConditionTrue {
			return nil
		}
		if before != nil {
			before()
		}
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			n := creates.Add(1)
			return metav1.ConditionTrue, "Created", fmt.Sprintf("database %d", n), nil
		})
	}}
}

// TestGuardLocksBeforeTheTask: the Guard writes its lock under the
// resourceVersion the reconciliation read, runs the task, and the outcome
// is written at the end of the chain.
func TestGuardLocksBeforeTheTask(t *testing.T) {
	var creates atomic.Int64
	var server *statusServer
	var seenLock atomic.Bool
	r := guarded(&creates, nil)
	check := &funcResource{name: "check", create: func(ctx context.Context, _ any) error {
		conds, _, err := readStatus(server.get())
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(conds, "DatabaseReady")
		seenLock.Store(c != nil && c.Status == metav1.ConditionUnknown && c.Reason == "Creating" && c.Message == conditioncontext.LockMessage)
		return nil
	}}
	server = newStatusServer(object("a", 1, nil))
	st := newStatusTest(t, object("a", 1, nil), server, testRouter(t, nil, r, check))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultSuccess {
		t.Fatalf("result = %s %q", tr.Result, tr.Error)
	}
	if !seenLock.Load() {
		t.Error("the lock was not on the server while the chain ran")
	}
	if w := server.writeLog(); !slices.Equal(w, []string{"merge status", "apply status"}) {
		t.Errorf("writes = %q, want the lock then the end-of-chain apply", w)
	}
	c := meta.FindStatusCondition(conditionsOf(t, server.get()), "DatabaseReady")
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != "Created" || c.Message != "database 1" || c.ObservedGeneration != 1 {
		t.Errorf("DatabaseReady = %+v, want the task's outcome", c)
	}
	if !hasFrameworkStep(tr, StepLockCondition, trace.OutcomeDone) || !hasFrameworkStep(tr, StepWriteStatus, trace.OutcomeDone) {
		t.Errorf("steps = %+v, want the lock and the status write", tr.Steps)
	}

	// The cache shows the outcome: the task does not run again.
	st.sync(t)
	st.f.Enqueue("ns/a")
	st.traces(t, 2)
	if n := creates.Load(); n != 1 {
		t.Errorf("creates = %d, want 1", n)
	}
}

// TestStatusWriteConflict: the end-of-chain apply of an object that does
// not carry the Framework's finalizer carries the resourceVersion the
// reconciliation read. Another writer's change since (a label) fails it
// with a conflict: the Framework reads the object and applies again on it.
// An object created again under the name (another UID) gets nothing: its
// own reconciliation writes its status. An object that carries the
// finalizer cannot be created again before the Framework removed it: its
// apply has no precondition, and another writer's change costs no read.
func TestStatusWriteConflict(t *testing.T) {
	for _, tt := range []struct {
		name   string
		held   bool
		change func(u *unstructured.Unstructured)
		writes []string
		gets   int
	}{
		{name: "another writer", change: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) }, writes: []string{"apply status"}, gets: 1},
		{name: "created again", change: func(u *unstructured.Unstructured) { u.SetUID("new") }, writes: nil, gets: 1},
		{name: "another writer, held by the finalizer", held: true, change: func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) }, writes: []string{"apply status"}, gets: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var server *statusServer
			r := &funcResource{name: "r", create: func(context.Context, any) error {
				server.bump(tt.change)
				return nil
			}}
			obj := object("a", 1, nil)
			obj.SetUID("old")
			var configure []func(*Config)
			if tt.held {
				obj.SetFinalizers([]string{FinalizerPrefix + "op"})
				configure = append(configure, func(c *Config) { c.DisableFinalizers = false })
			}
			server = newStatusServer(obj)
			st := newStatusTest(t, obj, server, testRouter(t, nil, r), configure...)
			tr := st.traces(t, 1)[0]
			if tr.Result != ResultSuccess {
				t.Fatalf("result = %s %q, want success", tr.Result, tr.Error)
			}
			if w := server.writeLog(); !slices.Equal(w, tt.writes) {
				t.Errorf("writes = %q, want %q", w, tt.writes)
			}
			server.mu.Lock()
			gets := server.gets
			server.mu.Unlock()
			if gets != tt.gets {
				t.Errorf("reads = %d, want %d", gets, tt.gets)
			}
			ready := meta.FindStatusCondition(conditionsOf(t, server.get()), conditioncontext.Ready)
			if got := ready != nil; got != (tt.writes != nil) {
				t.Errorf("Ready = %+v on the server, want it written: %v", ready, tt.writes != nil)
			}
		})
	}
}

// TestStatusWriteNotFoundThenCreatedAgain: the status apply finds no
// object (it was deleted), and the read that tells a missing status
// subresource from a missing object finds one of that name created again
// since (another UID): the object is gone, no write is due, and the CRD is
// not reported as having no status subresource.
func TestStatusWriteNotFoundThenCreatedAgain(t *testing.T) {
	var server *statusServer
	r := &funcResource{name: "r", create: func(context.Context, any) error {
		server.mu.Lock()
		server.noStatus = true // the apply answers 404, as for a deleted object
		server.mu.Unlock()
		server.bump(func(u *unstructured.Unstructured) { u.SetUID("new") })
		return nil
	}}
	obj := object("a", 1, nil)
	obj.SetUID("old")
	server = newStatusServer(obj)
	st := newStatusTest(t, obj, server, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultSuccess || strings.Contains(tr.Error, ErrNoStatusSubresource.Error()) {
		t.Fatalf("result = %s %q, want success (the object is gone)", tr.Result, tr.Error)
	}
	if !hasFrameworkStep(tr, StepWriteStatus, trace.OutcomeSkipped) {
		t.Errorf("steps = %+v, want the status write skipped", tr.Steps)
	}
}

// TestGuardConflictSkipsTheTask: when the object changed since it was read,
// the lock fails with a conflict before the task runs; the reconciliation
// is a conflict, retried with the latest object.
func TestGuardConflictSkipsTheTask(t *testing.T) {
	var creates atomic.Int64
	var server *statusServer
	var once sync.Once
	r := guarded(&creates, func() {
		once.Do(func() { server.bump(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) }) })
	})
	server = newStatusServer(object("a", 1, nil))
	st := newStatusTest(t, object("a", 1, nil), server, testRouter(t, nil, r))
	tr := st.traces(t, 1)[0]
	if tr.Result != ResultConflict || !apierrorsIsConflictText(tr.Error) {
		t.Fatalf("result = %s %q, want a conflict", tr.Result, tr.Error)
	}
	if n := creates.Load(); n != 0 {
		t.Fatalf("creates = %d after a failed lock, want 0", n)
	}
	if w := server.writeLog(); len(w) != 0 {
		t.Errorf("writes = %q, want none (nothing decided)", w)
	}
	st.sync(t) // the cache catches up: retried at once
	pollUntil(t, "the retry", func() bool { return creates.Load() == 1 })
}

func apierrorsIsConflictText(s string) bool {
	return strings.Contains(s, "the object has been modified")
}

// TestGuardLockedByAnother: a fresh lock of another reconciliation (another
// replica) stops the Guard before its task, as a conflict; a lock older
// than the lock's lifetime is taken over.
func TestGuardLockedByAnother(t *testing.T) {
	for _, tt := range []struct {
		name    string
		age     time.Duration
		creates int64
		result  string
	}{
		{name: "fresh", age: 0, creates: 0, result: ResultConflict},
		{name: "expired", age: 2 * time.Hour, creates: 1, result: ResultSuccess},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := object("a", 1, nil)
			obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
				"type": "DatabaseReady", "status": "Unknown", "reason": "Creating", "message": conditioncontext.LockMessage,
				"lastTransitionTime": time.Now().Add(-tt.age).UTC().Format(time.RFC3339),
			}}}
			var creates atomic.Int64
			st := newStatusTest(t, obj, nil, testRouter(t, nil, guarded(&creates, nil)), func(c *Config) { c.ReconcileTimeout = time.Minute })
			tr := st.traces(t, 1)[0]
			if tr.Result != tt.result || creates.Load() != tt.creates {
				t.Fatalf("result = %s %q, creates = %d; want %s, %d", tr.Result, tr.Error, creates.Load(), tt.result, tt.creates)
			}
			if tt.result == ResultConflict && !strings.Contains(tr.Error, conditioncontext.ErrLocked.Error()) {
				t.Errorf("error = %q, want it to say the condition is locked", tr.Error)
			}
		})
	}
}

// TestGuardLockAtItsLifetimeEdge: lastTransitionTime holds whole seconds,
// so a lock recorded at second S was taken at S or up to a second after.
// A lock recorded ReconcileTimeout plus 10 s (its lifetime) before a now of
// half a second past a whole second may be younger than its lifetime (taken
// at S+0.9 s, it is 0.4 s short of it): it stops the Guard, as a fresh one
// does; a second later it is old enough for sure, and is taken over.
func TestGuardLockAtItsLifetimeEdge(t *testing.T) {
	const timeout = time.Minute
	lifetime := timeout + statusWriteTimeout
	now := time.Date(2030, 1, 2, 3, 4, 5, 500_000_000, time.UTC)
	recorded := now.Truncate(time.Second).Add(-lifetime)
	for _, tt := range []struct {
		name    string
		now     time.Time
		creates int64
		result  string
	}{
		{name: "maybe younger than its lifetime", now: now, creates: 0, result: ResultConflict},
		{name: "older than its lifetime", now: now.Add(time.Second), creates: 1, result: ResultSuccess},
	} {
		t.Run(tt.name, func(t *testing.T) {
			obj := object("a", 1, nil)
			obj.Object["status"] = map[string]any{"conditions": []any{map[string]any{
				"type": "DatabaseReady", "status": "Unknown", "reason": "Creating", "message": conditioncontext.LockMessage,
				"lastTransitionTime": recorded.Format(time.RFC3339),
			}}}
			var creates atomic.Int64
			st := newStatusTestClock(t, obj, nil, testRouter(t, nil, guarded(&creates, nil)), func() time.Time { return tt.now },
				func(c *Config) { c.ReconcileTimeout = timeout })
			tr := st.traces(t, 1)[0]
			if tr.Result != tt.result || creates.Load() != tt.creates {
				t.Fatalf("lock recorded at %s, now %s: result = %s %q, creates = %d; want %s, %d",
					recorded.Format(time.RFC3339), tt.now.Format(time.RFC3339Nano), tr.Result, tr.Error, creates.Load(), tt.result, tt.creates)
			}
		})
	}
}

// TestGuardAfterOwnWrite: a resource that writes the reconciled object
// itself (status.recordID, with a JSON merge patch without precondition)
// and reports the answer's resourceVersion with resourceversioncontext does
// not make a later Guard's lock fail: the lock's precondition is that
// version, not the one read, which the own write superseded. Another
// writer's change after the own write, or before it (a lock of another
// replica, which the own write did not check), still fails the lock with a
// conflict before the task runs.
func TestGuardAfterOwnWrite(t *testing.T) {
	otherLock := func(u *unstructured.Unstructured) {
		u.Object["status"] = map[string]any{"conditions": []any{map[string]any{
			"type": "DatabaseReady", "status": "Unknown", "reason": "Creating", "message": conditioncontext.LockMessage,
			"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
		}}}
	}
	label := func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"x": "y"}) }
	for _, tt := range []struct {
		name          string
		before, after func(u *unstructured.Unstructured)
		result        string
		creates       int64
		writes        []string
	}{
		{name: "own write", result: ResultSuccess, creates: 1, writes: []string{"merge status", "merge status", "apply status"}},
		{name: "another write after it", after: label, result: ResultConflict, writes: []string{"merge status"}},
		{name: "another lock before it", before: otherLock, result: ResultConflict, writes: []string{"merge status"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var creates atomic.Int64
			var server *statusServer
			write := &funcResource{name: "id", create: func(ctx context.Context, _ any) error {
				if tt.before != nil {
					server.bump(tt.before)
				}
				res, err := server.client().Resource(thingsGVR).Namespace("ns").Patch(ctx, "a", types.MergePatchType,
					[]byte(`{"status":{"recordID":"r-1"}}`), metav1.PatchOptions{}, "status")
				if err != nil {
					return err
				}
				resourceversioncontext.SetResourceVersion(ctx, res.GetResourceVersion())
				if tt.after != nil {
					server.bump(tt.after)
				}
				return nil
			}}
			server = newStatusServer(object("a", 1, nil))
			st := newStatusTest(t, object("a", 1, nil), server, testRouter(t, nil, write, guarded(&creates, nil)))
			tr := st.traces(t, 1)[0]
			if tr.Result != tt.result || creates.Load() != tt.creates {
				t.Fatalf("result = %s %q, creates = %d; want %s, %d", tr.Result, tr.Error, creates.Load(), tt.result, tt.creates)
			}
			if tt.result == ResultConflict && !apierrorsIsConflictText(tr.Error) {
				t.Errorf("error = %q, want a conflict", tr.Error)
			}
			if w := server.writeLog(); !slices.Equal(w, tt.writes) {
				t.Errorf("writes = %q, want %q", w, tt.writes)
			}
			if id, _, _ := unstructured.NestedString(server.get().Object, "status", "recordID"); id != "r-1" {
				t.Errorf("status.recordID = %q on the server, want the own write's r-1 kept", id)
			}
			if tt.result != ResultSuccess {
				return
			}
			c := meta.FindStatusCondition(conditionsOf(t, server.get()), "DatabaseReady")
			if c == nil || c.Status != metav1.ConditionTrue || c.Message != "database 1" {
				t.Errorf("DatabaseReady = %+v, want the task's outcome", c)
			}
		})
	}
}

// TestGuardAfterOwnWriteOlderVersion: a version reported late, older than
// the one a lock since returned (a goroutine's own write that ended before
// the lock), is not the latest: the next lock keeps the lock's.
func TestGuardAfterOwnWriteOlderVersion(t *testing.T) {
	var server *statusServer
	var runs atomic.Int64
	guard := func(ctx context.Context, conditionType string) error {
		return conditioncontext.Guard(ctx, conditionType, "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			runs.Add(1)
			return metav1.ConditionTrue, "Created", "", nil
		})
	}
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		res, err := server.client().Resource(thingsGVR).Namespace("ns").Patch(ctx, "a", types.MergePatchType,
			[]byte(`{"status":{"recordID":"r-1"}}`), metav1.PatchOptions{}, "status")
		if err != nil {
			return err
		}
		resourceversioncontext.SetResourceVersion(ctx, res.GetResourceVersion())
		if err := guard(ctx, "DatabaseReady"); err != nil {
			return err
		}
		resourceversioncontext.SetResourceVersion(ctx, res.GetResourceVersion()) // late, older than the lock's
		return guard(ctx, "BucketReady")
	}}
	server = newStatusServer(object("a", 1, nil))
	st := newStatusTest(t, object("a", 1, nil), server, testRouter(t, nil, r))
	if tr := st.traces(t, 1)[0]; tr.Result != ResultSuccess || runs.Load() != 2 {
		t.Fatalf("result = %s %q, runs = %d; want success, 2", tr.Result, tr.Error, runs.Load())
	}
	if w := server.writeLog(); !slices.Equal(w, []string{"merge status", "merge status", "merge status", "apply status"}) {
		t.Errorf("writes = %q, want the own write, two locks and the end-of-chain apply", w)
	}
}

// TestGuardTwiceInOneReconciliation: a reconciliation may guard the same
// condition again after its own lock (its own lock does not block it).
func TestGuardTwiceInOneReconciliation(t *testing.T) {
	var runs atomic.Int64
	r := &funcResource{name: "r", create: func(ctx context.Context, _ any) error {
		for _, reason := range []string{"Creating", "Configuring"} {
			err := conditioncontext.Guard(ctx, "DatabaseReady", reason, func(context.Context) (metav1.ConditionStatus, string, string, error) {
				runs.Add(1)
				return metav1.ConditionUnknown, reason + "Done", "", nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}}
	st := newStatusTest(t, object("a", 1, nil), nil, testRouter(t, nil, r))
	if tr := st.traces(t, 1)[0]; tr.Result != ResultSuccess || runs.Load() != 2 {
		t.Fatalf("result = %s %q, runs = %d; want success, 2", tr.Result, tr.Error, runs.Load())
	}
	if w := st.server.writeLog(); !slices.Equal(w, []string{"merge status", "merge status", "apply status"}) {
		t.Errorf("writes = %q, want two locks and the end-of-chain apply", w)
	}
}

// TestNewValidatesConditions: Config-level names and requirements of
// Conditions fail at New, naming the field.
func TestNewValidatesConditions(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.test.operatorkit.io"},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1"}}},
	}
	base := func() Config {
		return Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}), Client: newStatusServer(object("a", 1, nil)).client(),
			Resource: thingsGVR, Conditions: true}
	}
	tests := []struct {
		name   string
		change func(*Config)
		field  string
	}{
		{name: "no client", change: func(c *Config) { c.Client = nil; c.DisableFinalizers = true }, field: "Client"},
		{name: "field manager too long", change: func(c *Config) { c.FieldManager = strings.Repeat("x", 129) }, field: "FieldManager"},
		{name: "field manager not printable", change: func(c *Config) { c.FieldManager = "a\nb" }, field: "FieldManager"},
		{name: "CRD without status subresource", change: func(c *Config) { c.CRD = crd; c.CRDClient = &crdclient.CRDClient{} }, field: "CRD"},
		// Built-in kinds whose status is their controller's, laid out
		// otherwise: every status apply would fail with a 500
		// (.status.observedGeneration: field not declared in schema).
		{name: "Namespaces", change: func(c *Config) { c.Resource = corev1.SchemeGroupVersion.WithResource("namespaces") }, field: "Conditions"},
		{name: "Deployments", change: func(c *Config) { c.Resource = appsv1.SchemeGroupVersion.WithResource("deployments") }, field: "Conditions"},
		{name: "ConfigMaps", change: func(c *Config) { c.Resource = corev1.SchemeGroupVersion.WithResource("configmaps") }, field: "Conditions"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := base()
			tt.change(&c)
			_, err := New(c)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "Config."+tt.field) {
				t.Fatalf("New() error = %v, want ErrInvalidConfig naming %s", err, tt.field)
			}
		})
	}
	c := base()
	c.DryRun, c.Client = true, nil
	if _, err := New(c); err != nil {
		t.Fatalf("New() with DryRun and no Client = %v, want nil (dry runs write nothing)", err)
	}
	// A built-in kind whose status is laid out as the Framework writes it.
	c = base()
	c.Resource = admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	if _, err := New(c); err != nil {
		t.Fatalf("New() of ValidatingAdmissionPolicies with Conditions = %v, want nil (status.conditions is []metav1.Condition)", err)
	}
	c = base()
	c.Resource, c.Conditions = corev1.SchemeGroupVersion.WithResource("namespaces"), false
	if _, err := New(c); err != nil {
		t.Fatalf("New() of Namespaces without Conditions = %v, want nil", err)
	}
}

// TestConditionsOffWritesNothing: without Config.Conditions, resources may
// still call Set (a no-op), and Guard fails as a permanent error.
func TestConditionsOffWritesNothing(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var creates atomic.Int64
	server := newStatusServer(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), ResourceRouter: testRouter(t, nil, guarded(&creates, nil)),
		Client: server.client(), Resource: thingsGVR, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "a reconciliation", func() bool { return len(f.Traces("ns/a")) == 1 })
	tr := f.Traces("ns/a")[0]
	if tr.Result != ResultPermanent || creates.Load() != 0 || len(server.writeLog()) != 0 {
		t.Fatalf("result = %s %q, creates %d, writes %q; want a permanent error, nothing run or written", tr.Result, tr.Error, creates.Load(), server.writeLog())
	}
}

func TestFailureReason(t *testing.T) {
	tr := trace.New("ns/a", time.Now())
	ctx := trace.NewContext(context.Background(), tr)
	trace.FromContext(ctx).Record("configmap", "apply create change", time.Now(), trace.OutcomeError, errors.New("x"))
	trace.FromContext(ctx).Record("3d-printer", "apply create change", time.Now(), trace.OutcomeError, errors.New("x"))
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"resource and step", &ExecutionError{Resource: "configmap", Operation: resource.OperationEnsureCreated, Err: errors.New("x")}, "ConfigmapApplyCreateChangeFailed"},
		{"digit first", &ExecutionError{Resource: "3d-printer", Err: errors.New("x")}, "Resource3dPrinterApplyCreateChangeFailed"},
		{"no resource set", ErrNoResourceSet, ReasonNoResourceSet},
		{"invalid condition", fmt.Errorf("x: %w", ErrInvalidCondition), ReasonInvalidCondition},
		{"reason of the error", &ExecutionError{Resource: "configmap", Err: retry.Permanent(conditioncontext.WithReason(errors.New("x"), "InvalidSpec"))}, "InvalidSpec"},
		{"invalid reason of the error", &ExecutionError{Resource: "configmap", Err: conditioncontext.WithReason(errors.New("x"), "not valid!")}, "ConfigmapApplyCreateChangeFailed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failureReason(tt.err, tr); got != tt.want {
				t.Errorf("failureReason() = %q, want %q", got, tt.want)
			}
			if err := conditioncontext.Validate(metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: tt.want}); err != nil {
				t.Errorf("reason %q is not valid: %v", tt.want, err)
			}
		})
	}
}

func TestListModeOf(t *testing.T) {
	entry := func(manager string, op metav1.ManagedFieldsOperationType, fields string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
	}
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	tests := []struct {
		name    string
		managed []metav1.ManagedFieldsEntry
		mode    listMode
		owned   []string
	}{
		{name: "none", mode: listUnknown},
		{name: "spec only", managed: []metav1.ManagedFieldsEntry{entry("kubectl", update, `{"f:spec":{"f:a":{}}}`)}, mode: listUnknown},
		{name: "atomic", managed: []metav1.ManagedFieldsEntry{entry("op", apply, `{"f:status":{"f:conditions":{},"f:observedGeneration":{}}}`)}, mode: listAtomic},
		{name: "map", managed: []metav1.ManagedFieldsEntry{
			entry("other", update, `{"f:status":{"f:conditions":{".":{},"k:{\"type\":\"Foreign\"}":{}}}}`),
			entry("op", apply, `{"f:status":{"f:conditions":{"k:{\"type\":\"Ready\"}":{".":{},"f:status":{}},"k:{\"type\":\"DatabaseReady\"}":{}}}}`),
			entry("op", update, `{"f:status":{"f:conditions":{"k:{\"type\":\"Locked\"}":{}}}}`),
		}, mode: listMap, owned: []string{"DatabaseReady", "Ready"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := listModeOf(tt.managed); got != tt.mode {
				t.Errorf("listModeOf() = %d, want %d", got, tt.mode)
			}
			owned := slices.Sorted(maps.Keys(ownedConditionTypes(tt.managed, "op")))
			if !slices.Equal(owned, tt.owned) {
				t.Errorf("ownedConditionTypes() = %q, want %q", owned, tt.owned)
			}
		})
	}
}

// typedWithStatus is laid out as kubebuilder generates a custom resource.
type typedWithStatus struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
		Other              string             `json:"other,omitempty"`
	} `json:"status,omitempty"`
}

// namedGeneration keeps its observedGeneration in a named integer type.
type namedGeneration struct {
	Status struct {
		ObservedGeneration generation `json:"observedGeneration"`
	} `json:"status"`
}

type generation int64

// otherLayout keeps its conditions under another Go type.
type otherLayout struct {
	Status struct {
		Conditions []map[string]any `json:"conditions"`
	} `json:"status"`
}

func TestReadStatusTypedMatchesUnstructured(t *testing.T) {
	obj := &typedWithStatus{}
	obj.Status.ObservedGeneration = 3
	obj.Status.Conditions = []metav1.Condition{
		{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Done", Message: "m", ObservedGeneration: 3, LastTransitionTime: metav1.NewTime(time.Unix(100, 0))},
		{Type: "Db", Status: metav1.ConditionFalse, Reason: "Wait"},
	}
	conds, observed, ok := readTypedStatus(obj)
	if !ok {
		t.Fatal("readTypedStatus did not read a kubebuilder layout")
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	want, wantObserved, err := readStatus(&unstructured.Unstructured{Object: content})
	if err != nil {
		t.Fatal(err)
	}
	if !sameConditions(conds, want) || observed == nil || *observed != *wantObserved {
		t.Fatalf("typed read = %+v, %v; unstructured read = %+v, %v", conds, observed, want, *wantObserved)
	}
	if _, observed, _ := readTypedStatus(&typedWithStatus{}); observed != nil {
		t.Errorf("observedGeneration of an empty status = %d, want absent", *observed)
	}
	if _, _, ok := readTypedStatus(&otherLayout{}); ok {
		t.Error("readTypedStatus read a layout it does not know; want the unstructured conversion")
	}
	// observedGeneration of a named integer type, read after another type
	// (the last type read is cached).
	named := &namedGeneration{}
	named.Status.ObservedGeneration = 5
	if _, observed, ok := readTypedStatus(named); !ok || observed == nil || *observed != 5 {
		t.Errorf("named observedGeneration = %v, %v, want 5", observed, ok)
	}
	if _, observed, _ := readTypedStatus(obj); observed == nil || *observed != 3 {
		t.Errorf("observedGeneration after another type = %v, want 3", observed)
	}
	if _, _, ok := readTypedStatus(struct{}{}); ok {
		t.Error("readTypedStatus read a non-pointer")
	}
}

func BenchmarkReadStatus(b *testing.B) {
	obj := &typedWithStatus{}
	obj.Status.ObservedGeneration = 3
	obj.Status.Conditions = []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Done"}}
	b.Run("typed", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := readStatus(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("converted", func(b *testing.B) {
		for b.Loop() {
			content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
			if err != nil {
				b.Fatal(err)
			}
			if _, _, err := readStatus(&unstructured.Unstructured{Object: content}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestConditionsWithoutManagedFields: with a cache that drops managedFields,
// the Framework learns the list mode from its first write's answer and then
// writes without reading the object first, removing Reconciling when the
// retry succeeds.
func TestConditionsWithoutManagedFields(t *testing.T) {
	var fail atomic.Bool
	fail.Store(true)
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		if fail.Load() {
			return errors.New("boom")
		}
		return nil
	}}
	obj := object("a", 1, nil)
	server := newStatusServer(obj)
	server.mapList = true
	st := newStatusTest(t, obj, server, testRouter(t, nil, r), func(c *Config) {
		c.BackOffFactory = func() backoff.BackOff { return backoff.NewConstantBackOff(time.Millisecond) }
	})
	st.traces(t, 1)
	fail.Store(false)
	stripped := server.get()
	stripped.SetManagedFields(nil)
	if err := st.inf.Update(stripped); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "Ready True without Reconciling", func() bool {
		var got []string
		for _, c := range conditionsOf(t, server.get()) {
			got = append(got, c.Type+"="+string(c.Status))
		}
		return slices.Equal(got, []string{"Ready=True"})
	})
	server.mu.Lock()
	defer server.mu.Unlock()
	if server.gets != 0 {
		t.Errorf("the Framework read the object %d times before writing; want 0 once the list mode is known", server.gets)
	}
}

func (o *typedWithStatus) DeepCopyObject() runtime.Object {
	out := *o
	o.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = append([]metav1.Condition(nil), o.Status.Conditions...)
	return &out
}

// TestConditionsOfTypedObjectWithoutKind: a typed cache strips apiVersion
// and kind; the Framework reads the kind from the API server once, and
// writes with it.
func TestConditionsOfTypedObjectWithoutKind(t *testing.T) {
	typed := &typedWithStatus{}
	typed.Namespace, typed.Name, typed.Generation, typed.ResourceVersion = "ns", "a", 1, "1"
	server := newStatusServer(object("a", 1, nil))
	inf := informertest.New(typed)
	f, err := New(Config{
		Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, &funcResource{name: "db"}), Client: server.client(), Resource: thingsGVR,
		DisableFinalizers: true, Conditions: true, TracesPerObject: 16,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { goleak.VerifyNone(t) })
	boot(t, f)
	pollUntil(t, "a status write", func() bool {
		server.mu.Lock()
		defer server.mu.Unlock()
		return len(server.kinds) == 1
	})
	next := typed.DeepCopyObject().(*typedWithStatus)
	next.Generation, next.ResourceVersion = 2, server.get().GetResourceVersion()
	if err := inf.Update(next); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "a second status write", func() bool {
		server.mu.Lock()
		defer server.mu.Unlock()
		return len(server.kinds) == 2
	})
	server.mu.Lock()
	defer server.mu.Unlock()
	for _, k := range server.kinds {
		if k != "test.operatorkit.io/v1 Thing" {
			t.Errorf("apply of %q, want test.operatorkit.io/v1 Thing", k)
		}
	}
	if server.gets != 1 {
		t.Errorf("%d reads of the object, want 1 (its kind, once)", server.gets)
	}
}

// BenchmarkSteadyStatus measures what Config.Conditions adds to a steady
// reconciliation, one that writes nothing: reading the typed object's
// status, the context of its conditions, and deciding that nothing changed.
func BenchmarkSteadyStatus(b *testing.B) {
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: []resource.Interface{&funcResource{name: "r"}}})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		b.Fatal(err)
	}
	f, err := New(Config{
		Name: "op", Informer: informertest.New(), ResourceRouter: rt, Client: newStatusServer(object("a", 1, nil)).client(),
		Resource: thingsGVR, DisableFinalizers: true, Conditions: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	obj := &typedWithStatus{}
	obj.Namespace, obj.Name, obj.Generation = "ns", "a", 3
	obj.Status.ObservedGeneration = 3
	obj.Status.Conditions = []metav1.Condition{{Type: conditioncontext.Ready, Status: metav1.ConditionTrue, Reason: ReasonSucceeded,
		Message: "reconciled by resource set v1", ObservedGeneration: 3, LastTransitionTime: metav1.Unix(100, 0)}}
	tr := trace.New("ns/a", time.Now())
	b.ReportAllocs()
	for b.Loop() {
		st := f.newStatusRun("ns/a", obj, obj)
		st.setName = "v1"
		ctx := conditioncontext.NewGuardedContext(context.Background(), st.current, st.lock)
		if o := st.finish(ctx, outcome{result: ResultSuccess}, tr); o.err != nil {
			b.Fatal(o.err)
		}
	}
	if n := tr.Len(); n != 0 {
		b.Fatalf("the steady status recorded %d steps: it wrote", n)
	}
}

func TestReadyMessage(t *testing.T) {
	for _, set := range []string{"", "v1", "release-2"} {
		m := readyMessageOf(set)
		if !isReadyMessage(m, set) {
			t.Errorf("isReadyMessage(%q, %q) = false", m, set)
		}
		if strings.HasSuffix(m, " ") {
			t.Errorf("message of set %q = %q ends with a space", set, m)
		}
	}
	if got := readyMessageOf(""); got != "reconciled" {
		t.Errorf("message of an unnamed set = %q, want reconciled", got)
	}
	for _, c := range []struct{ m, set string }{{"reconciled by resource set v1", "v2"}, {"reconciled", "v1"}, {"reconciled by resource set v1", ""}, {"reconciled by resource set xv1", "v1"}} {
		if isReadyMessage(c.m, c.set) {
			t.Errorf("isReadyMessage(%q, %q) = true", c.m, c.set)
		}
	}
}

// TestStatusRunObjectName: the status writes address the object by the
// namespace and name in its key, namespaced or cluster-scoped.
func TestStatusRunObjectName(t *testing.T) {
	for key, want := range map[string][2]string{"ns/a": {"ns", "a"}, "a": {"", "a"}} {
		s := &statusRun{key: key}
		if ns, name := s.namespace(), s.objName(); ns != want[0] || name != want[1] {
			t.Errorf("key %q: namespace %q, name %q; want %q, %q", key, ns, name, want[0], want[1])
		}
	}
}

// TestStatusStateOnlyWhenNeeded: a reconciliation whose object already
// shows the steady outcome and whose resources neither set nor read
// conditions makes no status state (and writes nothing); one whose
// resource reads or sets a condition, or whose object is not steady,
// makes it, and writes what the outcome calls for.
func TestStatusStateOnlyWhenNeeded(t *testing.T) {
	steady := func(name string, observed int64) *unstructured.Unstructured {
		u := object(name, 3, nil)
		ready := map[string]any{"type": conditioncontext.Ready, "status": "True", "reason": ReasonSucceeded,
			"message": readyMessageOf("v1"), "observedGeneration": int64(3), "lastTransitionTime": "2026-01-01T00:00:00Z"}
		u.Object["status"] = map[string]any{"observedGeneration": observed, "conditions": []any{ready}}
		return u
	}
	for _, tc := range []struct {
		name      string
		obj       *unstructured.Unstructured
		do        func(ctx context.Context)
		wantState bool
		wantWrite bool
	}{
		{name: "steady, conditions untouched", obj: steady("a", 3)},
		{name: "steady, a condition read", obj: steady("a", 3), wantState: true,
			do: func(ctx context.Context) { conditioncontext.Get(ctx, conditioncontext.Ready) }},
		{name: "steady, a condition set", obj: steady("a", 3), wantState: true, wantWrite: true,
			do: func(ctx context.Context) {
				conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Provisioned", "")
			}},
		{name: "observed generation behind", obj: steady("a", 2), wantState: true, wantWrite: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
				if tc.do != nil {
					tc.do(ctx)
				}
				return nil
			}}
			server := newStatusServer(tc.obj)
			f, err := New(Config{Name: "op", Informer: informertest.New(tc.obj), ResourceRouter: testRouter(t, nil, r),
				Client: server.client(), Resource: thingsGVR, DisableFinalizers: true, Conditions: true})
			if err != nil {
				t.Fatal(err)
			}
			rctx := newReconcileContext(context.Background(), time.Now().Add(time.Minute))
			o := f.reconcile(rctx, rctx, "ns/a")
			rctx.stop()
			if o.result != ResultSuccess || o.err != nil || r.calls.Load() != 1 {
				t.Fatalf("reconciliation: %s %v, %d calls of the resource; want a success after one", o.result, o.err, r.calls.Load())
			}
			if got := rctx.statusRun(false) != nil; got != tc.wantState {
				t.Errorf("status state made: %v, want %v", got, tc.wantState)
			}
			if got := len(server.writeLog()) > 0; got != tc.wantWrite {
				t.Errorf("status written: %q, want a write: %v", server.writeLog(), tc.wantWrite)
			}
			if tc.wantWrite && observedOf(server.get()) != 3 {
				t.Errorf("observedGeneration after the write = %d, want 3", observedOf(server.get()))
			}
		})
	}
}

// TestDryRunWritesNoCRD: a dry run writes nothing, the CRD neither:
// EnsureCRD (Boot and operator.Operator.Run call it) created or updated
// Config.CRD all the same, so that `--dry-run --install-crd` changed the
// cluster's CRD. Nor does it migrate the CRD's objects (MigrateStorage).
func TestDryRunWritesNoCRD(t *testing.T) {
	ext := apiextensionsfake.NewClientset()
	crds, err := crdclient.New(crdclient.Config{Client: ext})
	if err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.test.operatorkit.io"},
		Spec:       apiextensionsv1.CustomResourceDefinitionSpec{Group: "test.operatorkit.io", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true}}},
	}
	f, err := New(Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}),
		Resource: thingsGVR, DryRun: true, CRD: crd, CRDClient: crds, MigrateStorage: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := f.EnsureCRD(ctx); err != nil {
		t.Errorf("EnsureCRD in a dry run = %v, want nil", err)
	}
	for _, a := range ext.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			t.Errorf("a dry run's EnsureCRD wrote: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

// TestFailureReasonOfALongResourceName: a reason cut to the API server's
// 1024 bytes stays a valid reason (it ended in "..." before, which the
// server refuses in a condition, failing the status write).
func TestFailureReasonOfALongResourceName(t *testing.T) {
	long := strings.Repeat("a", 1100)
	got := failureReason(&ExecutionError{Resource: long, Err: errors.New("x")}, trace.New("ns/a", time.Now()))
	if err := conditioncontext.Validate(metav1.Condition{Type: "Ready", Status: metav1.ConditionFalse, Reason: got}); err != nil {
		t.Errorf("failureReason() of a resource of %d bytes (%d bytes, ending %q): not a valid reason", len(long), len(got), got[max(0, len(got)-10):])
	}
	if !strings.HasPrefix(got, "Aaaa") || !strings.HasSuffix(got, "Failed") {
		t.Errorf("failureReason() = %q...%q, want the resource's name cut, then Failed", got[:min(len(got), 10)], got[max(0, len(got)-10):])
	}
}

// TestConditionsCarriedOverFromAStaleCache: with status.conditions a map
// list, a condition a resource set in an earlier reconciliation and not in
// this one is carried over in the apply from the cached object; when
// another writer changed it since (kubectl, a controller that took the
// type over) and the cache does not show that yet, the apply must not write
// the cached value back over the other writer's, even when the object
// carries the finalizer (an apply without precondition otherwise).
func TestConditionsCarriedOverFromAStaleCache(t *testing.T) {
	var phase atomic.Int32
	r := &funcResource{name: "db", create: func(ctx context.Context, _ any) error {
		if phase.Load() == 0 {
			conditioncontext.Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Created", "database db-1")
			return nil
		}
		return errors.New("boom") // Ready False: a write, DatabaseReady not set
	}}
	obj := object("a", 1, nil)
	server := newStatusServer(obj)
	server.mapList = true
	st := newStatusTest(t, obj, server, testRouter(t, nil, r), func(c *Config) { c.DisableFinalizers = false })
	st.traces(t, 1)
	got := server.get()
	if c := meta.FindStatusCondition(conditionsOf(t, got), "DatabaseReady"); !slices.Contains(got.GetFinalizers(), st.f.Finalizer()) || c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("after the first reconciliation: finalizers %q, DatabaseReady %+v; want the finalizer and DatabaseReady True", got.GetFinalizers(), c)
	}
	st.sync(t)

	// Another writer sets DatabaseReady False (the Framework's manager
	// still co-owns the list entry, as the API server keeps it). The cache
	// does not show it yet.
	server.bump(func(u *unstructured.Unstructured) {
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if m := c.(map[string]any); m["type"] == "DatabaseReady" {
				m["status"], m["reason"], m["message"] = "False", "DeletedByHand", "the database was deleted"
			}
		}
		_ = unstructured.SetNestedSlice(u.Object, conds, "status", "conditions")
		u.SetManagedFields(append(u.GetManagedFields(), metav1.ManagedFieldsEntry{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			Subresource: "status", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:conditions":{"k:{\"type\":\"DatabaseReady\"}":{"f:status":{},"f:reason":{},"f:message":{}}}}}`)}}))
	})

	phase.Store(1)
	st.f.Enqueue("ns/a")
	pollUntil(t, "Ready False written", func() bool {
		c := meta.FindStatusCondition(conditionsOf(t, server.get()), conditioncontext.Ready)
		return c != nil && c.Status == metav1.ConditionFalse
	})
	if c := meta.FindStatusCondition(conditionsOf(t, server.get()), "DatabaseReady"); c == nil || c.Status != metav1.ConditionFalse || c.Reason != "DeletedByHand" {
		t.Errorf("DatabaseReady = %+v after the Framework's apply from a stale cache, want the other writer's False DeletedByHand kept", c)
	}
}
