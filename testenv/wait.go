package testenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// DefaultWaitTimeout bounds WaitReady when its context has no deadline.
const DefaultWaitTimeout = time.Minute

// errStalled ends WaitReady's polling: the object will not become ready.
var errStalled = errors.New("stalled")

// WaitReady waits until the object namespace/name of resource gvr is
// reconciled and ready, and returns it: its Ready condition is True for
// the object's current metadata.generation (the condition's
// observedGeneration, or else status.observedGeneration, when set), so that
// a Ready from before the last spec change does not count. That is the
// status an operatorkit Framework with framework.Config.Conditions writes,
// and what kstatus calls Current for an object with a Ready condition: what
// a test waits for after it creates or changes an object. namespace is
// empty for a cluster-scoped resource. A change of labels or annotations
// makes no new generation: after one that moves the object to another
// resource set (a release label that router.LabelIs reads), the Ready the
// previous set wrote counts, and WaitReady may return before the new set
// ran; wait for what the new set does (its children, or Ready's message,
// "reconciled by resource set v2"). So does a new release of the operator
// started on objects the previous one made Ready (an upgrade test, one
// operator stopped and the next started): nothing changed the objects,
// and WaitReady may return before the new release reconciled one; give
// each release's resource set a name of its own and wait for its message.
//
// WaitReady polls every 100 ms until ctx ends, or for DefaultWaitTimeout
// when ctx has no deadline. A Stalled condition that is True for the
// current generation ends it at once (the operator has given up: waiting
// does not help). Its error names the object and says what it last saw:
// the object missing, the Ready condition missing or not True (with its
// reason and message), an older generation observed, or the Stalled
// condition; transient read errors are retried.
func (e *Env) WaitReady(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	obj, what, last, err := e.poll(ctx, "WaitReady", gvr, namespace, name, readiness)
	switch {
	case err == nil:
		return obj, nil
	case errors.Is(err, errStalled):
		return obj, fmt.Errorf("testenv: %s will not be ready: %s", what, last)
	case what == "":
		return nil, err
	}
	return obj, fmt.Errorf("testenv: %s not ready: %s: %w", what, last, err)
}

// WaitCondition waits until the object namespace/name of resource gvr has
// a condition of type condType in status.conditions with status, and with
// reason unless reason is empty, for the object's current
// metadata.generation (counted as WaitReady counts it), and returns it: what
// a test waits for that is not Ready True, such as Ready False with reason
// SecretNotFound, Stalled True, or Reconciling. It polls and reports as
// WaitReady does (its error names the object and the condition as last
// seen), without WaitReady's Stalled rule: the condition waited for is the
// only one read. namespace is empty for a cluster-scoped resource.
func (e *Env) WaitCondition(ctx context.Context, gvr schema.GroupVersionResource, namespace, name, condType string, status metav1.ConditionStatus, reason string) (*unstructured.Unstructured, error) {
	want := condType + " " + string(status)
	if reason != "" {
		want += " (reason " + reason + ")"
	}
	obj, what, last, err := e.poll(ctx, "WaitCondition", gvr, namespace, name, func(u *unstructured.Unstructured) (bool, bool, string) {
		ok, why := conditionOf(u, condType, status, reason)
		return ok, false, why
	})
	if err != nil && what != "" {
		return obj, fmt.Errorf("testenv: %s not %s: %s: %w", what, want, last, err)
	}
	return obj, err
}

// poll reads the object namespace/name every 100 ms until check says done
// (nil error) or stop (errStalled), ctx ends, or DefaultWaitTimeout passed
// when ctx has no deadline. It returns the object last read, the object's
// name for an error (empty when no read could be made: err says why), what
// check or the reads said last, and the error.
func (e *Env) poll(ctx context.Context, caller string, gvr schema.GroupVersionResource, namespace, name string, check func(u *unstructured.Unstructured) (done, stop bool, why string)) (obj *unstructured.Unstructured, what, last string, err error) {
	client, _, err := e.clients()
	if err != nil {
		return nil, "", "", fmt.Errorf("testenv: %s: %w", caller, err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWaitTimeout)
		defer cancel()
	}
	what = gvr.GroupResource().String() + " " + name
	if namespace != "" {
		what = gvr.GroupResource().String() + " " + namespace + "/" + name
	}
	last = "not read yet" // what the last successful read said
	var readErr error     // the error of the reads since, if any
	err = wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		u, err := client.Resource(gvr).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			last, readErr = "not found", nil
			return false, nil
		case err != nil:
			readErr = err // a server restart, say: try again
			return false, nil
		}
		obj, readErr = u, nil
		done, stop, why := check(u)
		last = why
		if stop {
			return false, errStalled
		}
		return done, nil
	})
	if err != nil && !errors.Is(err, errStalled) && readErr != nil {
		last += " (the reads after that failed: " + readErr.Error() + ")"
	}
	return obj, what, last, err
}

// conditionOf reads u's status once and reports whether u has a condition
// of type condType with status (and reason, unless empty) for its current
// generation, and, when it has not, what it has instead.
func conditionOf(u *unstructured.Unstructured, condType string, status metav1.ConditionStatus, reason string) (ok bool, why string) {
	conds, observed, err := statusConditions(u)
	if err != nil {
		return false, "status unreadable: " + err.Error()
	}
	return conditionAt(conds, observed, u.GetGeneration(), condType, status, reason)
}

// conditionAt is conditionOf on a status read: conds, observed (its
// observedGeneration, nil when absent) and the object's generation gen.
func conditionAt(conds []metav1.Condition, observed *int64, gen int64, condType string, status metav1.ConditionStatus, reason string) (ok bool, why string) {
	c := meta.FindStatusCondition(conds, condType)
	switch {
	case c == nil:
		return false, "no " + condType + " condition in status.conditions"
	case c.ObservedGeneration != 0 && c.ObservedGeneration != gen:
		return false, fmt.Sprintf("%s is for generation %d, the object is at %d", condType, c.ObservedGeneration, gen)
	case observed != nil && *observed != gen:
		return false, fmt.Sprintf("status.observedGeneration is %d, the object is at %d", *observed, gen)
	case c.Status != status || reason != "" && c.Reason != reason:
		return false, fmt.Sprintf("%s is %s (reason %s: %s)", condType, c.Status, c.Reason, c.Message)
	}
	return true, ""
}

// readiness reads u's status once: whether u is ready, whether it is
// stalled (Stalled True for its current generation), and, when it is not
// ready, why.
func readiness(u *unstructured.Unstructured) (ready, stalled bool, why string) {
	conds, observed, err := statusConditions(u)
	if err != nil {
		return false, false, "status unreadable: " + err.Error()
	}
	gen := u.GetGeneration()
	if c := meta.FindStatusCondition(conds, "Stalled"); c != nil && c.Status == metav1.ConditionTrue && (c.ObservedGeneration == 0 || c.ObservedGeneration == gen) {
		return false, true, fmt.Sprintf("Stalled is True (reason %s: %s)", c.Reason, c.Message)
	}
	ready, why = conditionAt(conds, observed, gen, "Ready", metav1.ConditionTrue, "")
	return ready, false, why
}

// statusConditions returns u's status.conditions and its
// status.observedGeneration (nil when absent), converted by apimachinery
// into metav1.Condition. A condition's lastTransitionTime is not read (it
// is left zero): no caller needs it, and some writers leave it the empty
// string, which metav1.Time does not parse; it made the whole status
// unreadable.
func statusConditions(u *unstructured.Unstructured) ([]metav1.Condition, *int64, error) {
	var s struct {
		Status struct {
			ObservedGeneration *int64      `json:"observedGeneration,omitempty"`
			Conditions         []condition `json:"conditions,omitempty"`
		} `json:"status"`
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &s); err != nil {
		return nil, nil, err
	}
	var conds []metav1.Condition
	if len(s.Status.Conditions) > 0 {
		conds = make([]metav1.Condition, len(s.Status.Conditions))
		for i, c := range s.Status.Conditions {
			conds[i] = metav1.Condition{Type: c.Type, Status: c.Status, ObservedGeneration: c.ObservedGeneration, Reason: c.Reason, Message: c.Message}
		}
	}
	return conds, s.Status.ObservedGeneration, nil
}

// condition is a metav1.Condition as statusConditions reads it: without
// its lastTransitionTime.
type condition struct {
	Type               string                 `json:"type"`
	Status             metav1.ConditionStatus `json:"status"`
	ObservedGeneration int64                  `json:"observedGeneration,omitempty"`
	Reason             string                 `json:"reason"`
	Message            string                 `json:"message"`
}
