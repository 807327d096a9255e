package child_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/resource/child"
)

// TestReadinessOfStatefulSetUpdates: a StatefulSet whose update the user
// stages (a rolling update's partition) or makes (the OnDelete strategy)
// is ready, as kstatus reads it Current, once its pods are ready and those
// the controller updates are updated. ReadinessOf waited for every replica
// to be updated, which the controller never does then: the owner waited
// for ever ("1 of 3 replicas updated"). A StatefulSet just created, with
// no status, is not ready, whatever its strategy.
func TestReadinessOfStatefulSetUpdates(t *testing.T) {
	sts := func(strategy appsv1.StatefulSetUpdateStrategy, s appsv1.StatefulSetStatus) *appsv1.StatefulSet {
		replicas := int32(3)
		return &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Generation: 2},
			Spec:       appsv1.StatefulSetSpec{Replicas: &replicas, UpdateStrategy: strategy},
			Status:     s,
		}
	}
	partition := func(p int32) appsv1.StatefulSetUpdateStrategy {
		return appsv1.StatefulSetUpdateStrategy{Type: appsv1.RollingUpdateStatefulSetStrategyType, RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: &p}}
	}
	onDelete := appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
	// rolling is the status of a template change rolled out to updated of
	// the 3 replicas, all ready.
	rolling := func(updated int32) appsv1.StatefulSetStatus {
		return appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, CurrentReplicas: 3 - updated, UpdatedReplicas: updated, CurrentRevision: "web-1", UpdateRevision: "web-2"}
	}
	tests := []struct {
		name       string
		obj        *appsv1.StatefulSet
		wantReady  bool
		wantReason string
	}{
		{name: "just created, no status", obj: sts(partition(0), appsv1.StatefulSetStatus{}), wantReason: "generation 2 not observed yet (observed 0)"},
		{name: "OnDelete, just created, no status", obj: sts(onDelete, appsv1.StatefulSetStatus{}), wantReason: "generation 2 not observed yet (observed 0)"},
		{name: "rolling update under way", obj: sts(partition(0), rolling(1)), wantReason: "1 of 3 replicas updated"},
		{name: "rolling update done", obj: sts(partition(0), appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "web-2", UpdateRevision: "web-2"}), wantReady: true},
		{name: "partition 2, its one replica updated", obj: sts(partition(2), rolling(1)), wantReady: true},
		{name: "partition 2, not yet updated", obj: sts(partition(2), rolling(0)), wantReason: "0 of 1 replicas updated (partition 2)"},
		{name: "partition above the replicas", obj: sts(partition(5), rolling(0)), wantReady: true},
		{name: "partition 2, a replica not ready", obj: func() *appsv1.StatefulSet { o := sts(partition(2), rolling(1)); o.Status.ReadyReplicas = 2; return o }(), wantReason: "2 of 3 replicas ready"},
		{name: "OnDelete, old revision", obj: sts(onDelete, rolling(1)), wantReady: true},
		{name: "OnDelete, a replica not ready", obj: func() *appsv1.StatefulSet { o := sts(onDelete, rolling(1)); o.Status.ReadyReplicas = 2; return o }(), wantReason: "2 of 3 replicas ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ready, reason := child.ReadinessOf(tt.obj); ready != tt.wantReady || reason != tt.wantReason {
				t.Fatalf("ReadinessOf() = %v %q, want %v %q", ready, reason, tt.wantReady, tt.wantReason)
			}
		})
	}
}

// TestReadinessOfStatefulSetScaledDown: a StatefulSet scaled down is not
// ready while the pods of its higher ordinals are still there, being
// deleted (status.replicas above spec.replicas), as a Deployment with old
// replicas is not and kstatus reads it InProgress; ReadinessOf read it
// ready at once, its ready replicas being more than enough.
func TestReadinessOfStatefulSetScaledDown(t *testing.T) {
	one := int32(1)
	o := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Generation: 2},
		Spec:       appsv1.StatefulSetSpec{Replicas: &one},
		Status:     appsv1.StatefulSetStatus{ObservedGeneration: 2, Replicas: 3, ReadyReplicas: 3, CurrentReplicas: 3, UpdatedReplicas: 3, CurrentRevision: "web-1", UpdateRevision: "web-1"},
	}
	if ready, reason := child.ReadinessOf(o); ready || reason != "2 extra replicas pending termination" {
		t.Fatalf("ReadinessOf(scaled down from 3 to 1, 3 pods left) = %v %q, want false \"2 extra replicas pending termination\"", ready, reason)
	}
	o.Status.Replicas, o.Status.ReadyReplicas, o.Status.CurrentReplicas, o.Status.UpdatedReplicas = 1, 1, 1, 1
	if ready, reason := child.ReadinessOf(o); !ready || reason != "" {
		t.Fatalf("ReadinessOf(scaled down from 3 to 1, done) = %v %q, want true", ready, reason)
	}
}
