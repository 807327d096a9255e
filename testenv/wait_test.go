package testenv

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestReadinessWithoutLastTransitionTime: a condition whose
// lastTransitionTime is the empty string (some writers send one, and an
// unstructured object carries it as it is) is read like any other: WaitReady
// reads the condition's type, status, reason, message and observedGeneration,
// never its time. It made the whole status unreadable, so WaitReady waited
// until its deadline for an object that was ready.
func TestReadinessWithoutLastTransitionTime(t *testing.T) {
	obj := func(status string, observed int64) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "crd.testenv.io/v1",
			"kind":       "Widget",
			"metadata":   map[string]any{"name": "w", "namespace": "default", "generation": int64(2)},
			"status": map[string]any{
				"observedGeneration": int64(2),
				"conditions": []any{map[string]any{
					"type": "Ready", "status": status, "reason": "Reconciled", "message": "said by the test",
					"observedGeneration": observed, "lastTransitionTime": "",
				}},
			},
		}}
		return u
	}
	for _, tc := range []struct {
		name     string
		u        *unstructured.Unstructured
		ready    bool
		whyWants string
	}{
		{"Ready True", obj("True", 2), true, ""},
		{"Ready False", obj("False", 2), false, "Ready is False (reason Reconciled: said by the test)"},
		{"Ready True for an older generation", obj("True", 1), false, "Ready is for generation 1, the object is at 2"},
	} {
		ready, stalled, why := readiness(tc.u)
		if ready != tc.ready || stalled || why != tc.whyWants {
			t.Errorf("%s: readiness = %v, stalled %v, %q; want %v, not stalled, %q", tc.name, ready, stalled, why, tc.ready, tc.whyWants)
		}
	}
	// The object WaitReady returns is the one it read, unchanged.
	u := obj("True", 2)
	readiness(u)
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	if c := conds[0].(map[string]any); c["lastTransitionTime"] != "" {
		t.Errorf("lastTransitionTime after readiness = %#v, want the empty string it had", c["lastTransitionTime"])
	}
}
