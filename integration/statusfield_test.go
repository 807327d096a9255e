package integration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/statuscontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/trace"
)

// TestStatusFields: status fields that a resource sets with statuscontext
// are written by the real API server in the Framework's one status apply
// (the first reconciliation writes the finalizer and the status, no more),
// steady resyncs write nothing, a chain that fails before the resource keeps
// them (the apply carries them over, with the cache's managedFields or
// without them), nil removes one, and another writer's status field stays.
func TestStatusFields(t *testing.T) {
	t.Parallel()
	for _, drop := range []bool{false, true} {
		t.Run(fmt.Sprintf("DropManagedFields=%v", drop), func(t *testing.T) {
			t.Parallel()
			testStatusFields(t, drop)
		})
	}
}

func testStatusFields(t *testing.T, drop bool) {
	ns := newNamespace(t)
	counter := requestcount.New()
	var fail, moved atomic.Bool
	gate := &statusResource{name: "gate", create: func(context.Context, *unstructured.Unstructured) error {
		if fail.Load() {
			return errors.New("the gate is closed")
		}
		return nil
	}}
	nodes := &statusResource{name: "nodes", create: func(ctx context.Context, _ *unstructured.Unstructured) error {
		if moved.Load() {
			statuscontext.Set(ctx, "nodes", []string{"w1-0"})
			statuscontext.Set(ctx, "endpoint", nil)
			return nil
		}
		statuscontext.Set(ctx, "nodes", []string{"w1-0", "w1-1"})
		statuscontext.Set(ctx, "endpoint", map[string]any{"host": "w1.svc", "port": 11211})
		return nil
	}}
	f := startStatusFramework(t, ns, statusOptions{config: counter.Wrap(env.Config()), resync: time.Second, dropManagedFields: drop,
		backOff: constantBackOff(100 * time.Millisecond)}, resourceSet(t, "", gate, nodes))
	rc := widgetClient(t, ns)
	key := ns + "/w1"
	field := func(s widgetStatus, name string) any {
		v, _, _ := unstructured.NestedFieldNoCopy(s.obj.Object, "status", name)
		return v
	}
	twoNodes := []any{"w1-0", "w1-1"}
	endpoint := map[string]any{"host": "w1.svc", "port": int64(11211)}

	start := counter.Snapshot()
	createWidget(t, newWidget(ns, "w1", "", map[string]string{"a": "1"}))
	s := waitStatus(t, rc, "w1", "Ready with nodes and endpoint", func(s widgetStatus) bool {
		return readyAt(s) && reflect.DeepEqual(field(s, "nodes"), twoNodes)
	})
	if got := field(s, "endpoint"); !reflect.DeepEqual(got, endpoint) {
		t.Errorf("status.endpoint = %v, want %v", got, endpoint)
	}
	lastTrace(t, f.Framework, key, func(tr trace.Trace) bool { return tr.Result == framework.ResultSuccess })
	if w := counter.Snapshot().Sub(start); w.ByVerb["patch"] != 2 || w.Writes != 2 {
		t.Errorf("writes of the first reconciliation = %s, want 2 patches (finalizer, status): the fields add none", w)
	}

	// Steady resyncs: nothing written.
	steady := counter.Snapshot()
	since := time.Now()
	for range 3 {
		since = waitReconciled(t, f.Framework, key, framework.ResultSuccess, since).Start
	}
	if d := counter.Snapshot().Sub(steady); d.Writes != 0 {
		t.Errorf("writes during steady resyncs = %s, want none", d)
	}

	// Another writer applies a status field of its own.
	foreign := `{"apiVersion":"` + widgetGVR.GroupVersion().String() + `","kind":"Widget","metadata":{"name":"w1"},"status":{"foreign":"theirs"}}`
	if _, err := rc.Patch(t.Context(), "w1", types.ApplyPatchType, []byte(foreign), metav1.PatchOptions{FieldManager: "someone-else"}, "status"); err != nil {
		t.Fatal(err)
	}

	// The chain fails before the resource that sets the fields: they are
	// kept, with the failure's conditions.
	fail.Store(true)
	updateSpec(t, rc, "w1", map[string]string{"a": "2"})
	s = waitStatus(t, rc, "w1", "Ready False at generation 2", func(s widgetStatus) bool {
		c := s.condition(conditioncontext.Ready)
		return s.generation == 2 && c != nil && c.Status == metav1.ConditionFalse && c.ObservedGeneration == 2
	})
	if got := field(s, "nodes"); !reflect.DeepEqual(got, twoNodes) {
		t.Errorf("status.nodes after a failure before its resource = %v, want %v kept", got, twoNodes)
	}
	if got := field(s, "endpoint"); !reflect.DeepEqual(got, endpoint) {
		t.Errorf("status.endpoint after a failure before its resource = %v, want %v kept", got, endpoint)
	}

	// Recovered, with one node and no endpoint (nil removes it).
	moved.Store(true)
	fail.Store(false)
	s = waitStatus(t, rc, "w1", "Ready at generation 2 with one node", func(s widgetStatus) bool {
		return readyAt(s) && reflect.DeepEqual(field(s, "nodes"), []any{"w1-0"})
	})
	if got := field(s, "endpoint"); got != nil {
		t.Errorf("status.endpoint after Set(nil) = %v, want it removed", got)
	}
	if got := field(s, "foreign"); got != "theirs" {
		t.Errorf("status.foreign = %v, want the other writer's field kept", got)
	}
}
