package framework

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/router"
)

// TestObjectMovingBetweenSets pins what router/doc.go documents of an
// object whose release label moves it from set to set (2, then 1, then a
// release no set handles, then 2 again): each reconciliation runs, and
// its trace names, the set the object has then; Ready's message names it;
// a condition that only release 2's resource sets stays while the object
// is in release 1 (it may be a Guard's outcome, which a move back must
// find); and operatorkit_framework_objects counts the object under the
// set that last reconciled it, also while no set handles it.
func TestObjectMovingBetweenSets(t *testing.T) {
	service := &funcResource{name: "service", create: func(ctx context.Context, _ any) error {
		conditioncontext.Set(ctx, "ServiceReady", metav1.ConditionTrue, "Created", "service ns/a")
		return nil
	}}
	var sets []*router.ResourceSet
	for release, r := range map[string]resource.Interface{"1": &funcResource{name: "configmap"}, "2": service} {
		set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v" + release, Handles: router.LabelIs("release", release, false), Resources: []resource.Interface{r}})
		if err != nil {
			t.Fatal(err)
		}
		sets = append(sets, set)
	}
	rt, err := router.New(router.Config{ResourceSets: sets})
	if err != nil {
		t.Fatal(err)
	}
	st := newStatusTest(t, object("a", 1, map[string]string{"release": "2"}), nil, rt)

	for i, step := range []struct {
		release  string
		set      string // the set of the trace; "" for none
		ready    string // Ready's status and message
		perSet   map[string]int
		stalled  bool
		services bool // ServiceReady True is there
	}{
		{release: "2", set: "v2", ready: "True reconciled by resource set v2", perSet: map[string]int{"v2": 1}, services: true},
		{release: "1", set: "v1", ready: "True reconciled by resource set v1", perSet: map[string]int{"v1": 1, "v2": 0}, services: true},
		{release: "3", ready: "False " + ReasonNoResourceSet, perSet: map[string]int{"v1": 1, "v2": 0}, stalled: true, services: true},
		{release: "2", set: "v2", ready: "True reconciled by resource set v2", perSet: map[string]int{"v1": 0, "v2": 1}, services: true},
	} {
		if i > 0 {
			st.sync(t) // the cache shows the last status write
			st.server.bump(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"release": step.release}) })
			st.sync(t)
		}
		trs := st.traces(t, i+1)
		tr := trs[len(trs)-1]
		if tr.ResourceSet != step.set {
			t.Errorf("release %s: trace of set %q (result %s), want %q", step.release, tr.ResourceSet, tr.Result, step.set)
		}
		conds := conditionsOf(t, st.server.get())
		ready := meta.FindStatusCondition(conds, conditioncontext.Ready)
		got := ""
		if ready != nil {
			got = string(ready.Status) + " " + ready.Message
			if ready.Status == metav1.ConditionFalse {
				got = string(ready.Status) + " " + ready.Reason
			}
		}
		if got != step.ready {
			t.Errorf("release %s: Ready %q, want %q", step.release, got, step.ready)
		}
		if s := meta.IsStatusConditionTrue(conds, conditioncontext.Stalled); s != step.stalled {
			t.Errorf("release %s: Stalled True %v, want %v", step.release, s, step.stalled)
		}
		if s := meta.IsStatusConditionTrue(conds, "ServiceReady"); s != step.services {
			t.Errorf("release %s: ServiceReady True %v, want %v", step.release, s, step.services)
		}
		_, _, _, perSet := st.f.state.stats()
		for set, n := range step.perSet {
			if perSet[set] != n {
				t.Errorf("release %s: objects{resource_set=%q} = %d, want %d (all: %v)", step.release, set, perSet[set], n, perSet)
			}
		}
	}
}
