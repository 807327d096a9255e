package child

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// beingDeleted is why a child that has a deletionTimestamp is not ready:
// "being deleted", and the finalizers that hold it, which say whom to ask
// when it stays ("being deleted (finalizers: example.com/backup)").
func beingDeleted(m metav1.Object) string {
	if f := m.GetFinalizers(); len(f) > 0 {
		return "being deleted (finalizers: " + strings.Join(f, ", ") + ")"
	}
	return "being deleted"
}

// Ready reports whether child is ready by the kstatus rules
// (sigs.k8s.io/cli-utils/pkg/kstatus) for the kinds below, and true for
// every other kind; a child being deleted (with a deletionTimestamp,
// kstatus's Terminating) is not ready, whatever its kind. Use it as
// Config.ReadyWhen:
// ReadyWhen: child.Ready[*appsv1.Deployment]; [ReadinessOf] also says why
// a child is not ready.
//
//   - Deployment: status.observedGeneration ≥ metadata.generation, and
//     updated, ready and available replicas equal spec.replicas (default 1),
//     with no old replicas left (status.replicas == spec.replicas).
//   - StatefulSet: observedGeneration ≥ generation, ready and current (or,
//     with an update revision, updated) replicas equal spec.replicas, and
//     no more replicas than that (none left of a scale-down); with
//     the OnDelete update strategy ready replicas of any revision (the
//     controller updates no pod: someone deletes them), and with a rolling
//     update's partition p, spec.replicas − p updated replicas (a staged
//     rollout updates no more), as kstatus reads both Current.
//   - DaemonSet: observedGeneration ≥ generation, desiredNumberScheduled
//     pods updated and available.
//   - Job: condition Complete True. A Job that failed is not ready
//     either: its owner waits for it, looked at again every
//     Config.WaitDelay, as long as it stays; to give up instead (Stalled),
//     fail the step with a permanent error, as docs/getting-started.md
//     shows ("Later: steps that run one after another").
//   - Pod: condition Ready True, or phase Succeeded.
//   - Service: type LoadBalancer needs an ingress in
//     status.loadBalancer; other types are ready at once.
func Ready[C any](child C) bool {
	ready, _ := ReadinessOf(child)
	return ready
}

// ReadinessOf is [Ready] with the reason a child is not ready, in the
// words of the Reconciling message ("1 of 2 replicas available", "failed:
// <the Job's message>"): ready is Ready's answer, reason empty when child
// is ready (every kind but those Ready lists is). Use it as
// Config.Readiness, Readiness: child.ReadinessOf[*appsv1.Deployment], or
// as the fallback of a check of your own. It reads child only: cheap, and
// safe for concurrent use. A child being deleted reads "being deleted",
// followed by the finalizers that hold it when it has any ("being deleted
// (finalizers: foregroundDeletion)").
//
// The reason names the first check the child fails, the observed
// generation first. A Deployment, StatefulSet or DaemonSet just written reads
// "generation 1 not observed yet (observed 0)" (its controller has not
// seen it yet: always so against an API server without controllers, such
// as testenv's), then "0 of 1 replicas updated" (a Deployment), "0 of 1
// replicas ready" (a StatefulSet) or "0 of 3 pods updated" (a DaemonSet);
// a Job "not complete (1 active, 0 succeeded)", a Pod "phase Pending,
// condition Ready not True", a Service of type LoadBalancer "no load
// balancer ingress yet".
func ReadinessOf[C any](child C) (ready bool, reason string) {
	if m, ok := any(child).(metav1.Object); ok && !nilptr.Is(m) && m.GetDeletionTimestamp() != nil {
		return false, beingDeleted(m) // kstatus: Terminating, whatever the kind
	}
	switch o := any(child).(type) {
	case *appsv1.Deployment:
		want := replicasOr1(o.Spec.Replicas)
		s := o.Status
		switch {
		case s.ObservedGeneration < o.Generation:
			return false, fmt.Sprintf("generation %d not observed yet (observed %d)", o.Generation, s.ObservedGeneration)
		case s.UpdatedReplicas < want:
			return false, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)
		case s.Replicas > s.UpdatedReplicas:
			return false, fmt.Sprintf("%d old replicas pending termination", s.Replicas-s.UpdatedReplicas)
		case s.AvailableReplicas < want:
			return false, fmt.Sprintf("%d of %d replicas available", s.AvailableReplicas, want)
		case s.ReadyReplicas < want:
			return false, fmt.Sprintf("%d of %d replicas ready", s.ReadyReplicas, want)
		}
	case *appsv1.StatefulSet:
		want := replicasOr1(o.Spec.Replicas)
		s := o.Status
		switch {
		case s.ObservedGeneration < o.Generation:
			return false, fmt.Sprintf("generation %d not observed yet (observed %d)", o.Generation, s.ObservedGeneration)
		case s.ReadyReplicas < want:
			return false, fmt.Sprintf("%d of %d replicas ready", s.ReadyReplicas, want)
		case s.Replicas > want:
			// Scaled down: the pods of the higher ordinals are still
			// there, being deleted.
			return false, fmt.Sprintf("%d extra replicas pending termination", s.Replicas-want)
		case o.Spec.UpdateStrategy.Type == appsv1.OnDeleteStatefulSetStrategyType:
			// Its pods take a new template when someone deletes them:
			// the controller updates none, so ready replicas of any
			// revision are all it will do (kstatus: Current).
		case partition(o) > 0:
			// A staged rollout: only the pods of ordinals from the
			// partition up are updated (kstatus: Current then).
			if staged := max(want-partition(o), 0); s.UpdatedReplicas < staged {
				return false, fmt.Sprintf("%d of %d replicas updated (partition %d)", s.UpdatedReplicas, staged, partition(o))
			}
		case s.UpdateRevision != "" && s.CurrentRevision != s.UpdateRevision && s.UpdatedReplicas < want:
			return false, fmt.Sprintf("%d of %d replicas updated", s.UpdatedReplicas, want)
		case s.CurrentReplicas < want && s.UpdatedReplicas < want:
			return false, fmt.Sprintf("%d of %d replicas current", s.CurrentReplicas, want)
		}
	case *appsv1.DaemonSet:
		s := o.Status
		switch {
		case s.ObservedGeneration < o.Generation:
			return false, fmt.Sprintf("generation %d not observed yet (observed %d)", o.Generation, s.ObservedGeneration)
		case s.UpdatedNumberScheduled < s.DesiredNumberScheduled:
			return false, fmt.Sprintf("%d of %d pods updated", s.UpdatedNumberScheduled, s.DesiredNumberScheduled)
		case s.NumberAvailable < s.DesiredNumberScheduled:
			return false, fmt.Sprintf("%d of %d pods available", s.NumberAvailable, s.DesiredNumberScheduled)
		}
	case *batchv1.Job:
		for _, c := range o.Status.Conditions {
			switch {
			case c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue:
				return true, ""
			case c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue:
				return false, "failed: " + c.Message
			}
		}
		return false, fmt.Sprintf("not complete (%d active, %d succeeded)", o.Status.Active, o.Status.Succeeded)
	case *corev1.Pod:
		if o.Status.Phase == corev1.PodSucceeded {
			return true, ""
		}
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true, ""
			}
		}
		return false, "phase " + string(o.Status.Phase) + ", condition Ready not True"
	case *corev1.Service:
		if o.Spec.Type == corev1.ServiceTypeLoadBalancer && len(o.Status.LoadBalancer.Ingress) == 0 {
			return false, "no load balancer ingress yet"
		}
	}
	return true, ""
}

// partition returns the partition of a StatefulSet's rolling update, 0
// when it has none.
func partition(o *appsv1.StatefulSet) int32 {
	if ru := o.Spec.UpdateStrategy.RollingUpdate; ru != nil && ru.Partition != nil {
		return *ru.Partition
	}
	return 0
}

func replicasOr1(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}
