package testenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
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
// empty for a cluster-scoped resource.
//
// WaitReady polls every 100 ms until ctx ends, or for DefaultWaitTimeout
// when ctx has no deadline. A Stalled condition that is True for the
// current generation ends it at once (the operator has given up: waiting
// does not help). Its error names the object and says what it last saw:
// the object missing, the Ready condition missing or not True (with its
// reason and message), an older generation observed, or the Stalled
// condition; transient read errors are retried.
func (e *Env) WaitReady(ctx context.Context, gvr schema.GroupVersionResource, namespace, name string) (*unstructured.Unstructured, error) {
	client, _, err := e.clients()
	if err != nil {
		return nil, fmt.Errorf("testenv: WaitReady: %w", err)
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultWaitTimeout)
		defer cancel()
	}
	what := gvr.GroupResource().String() + " " + name
	if namespace != "" {
		what = gvr.GroupResource().String() + " " + namespace + "/" + name
	}
	var obj *unstructured.Unstructured
	last := "not read yet" // what the last successful read said
	var readErr error      // the error of the reads since, if any
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
		var ready bool
		ready, last = readiness(u)
		if stalled(u) {
			return false, errStalled
		}
		return ready, nil
	})
	switch {
	case err == nil:
		return obj, nil
	case errors.Is(err, errStalled):
		return obj, fmt.Errorf("testenv: %s will not be ready: %s", what, last)
	case readErr != nil:
		last += " (the reads after that failed: " + readErr.Error() + ")"
	}
	return obj, fmt.Errorf("testenv: %s not ready: %s: %w", what, last, err)
}

// readiness reports whether u is ready and, when it is not, why.
func readiness(u *unstructured.Unstructured) (bool, string) {
	gen := u.GetGeneration()
	observed, hasObserved, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration")
	if stalled(u) {
		c := condition(u, "Stalled")
		return false, fmt.Sprintf("Stalled is True (reason %s: %s)", c["reason"], c["message"])
	}
	c := condition(u, "Ready")
	if c == nil {
		return false, "no Ready condition in status.conditions"
	}
	if g, ok := c["observedGeneration"].(int64); ok && g != 0 && g != gen {
		return false, fmt.Sprintf("Ready is for generation %d, the object is at %d", g, gen)
	}
	if hasObserved && observed != gen {
		return false, fmt.Sprintf("status.observedGeneration is %d, the object is at %d", observed, gen)
	}
	if c["status"] != "True" {
		return false, fmt.Sprintf("Ready is %v (reason %v: %v)", c["status"], c["reason"], c["message"])
	}
	return true, ""
}

// stalled reports whether u's Stalled condition is True for its current
// generation.
func stalled(u *unstructured.Unstructured) bool {
	c := condition(u, "Stalled")
	if c == nil || c["status"] != "True" {
		return false
	}
	g, ok := c["observedGeneration"].(int64)
	return !ok || g == 0 || g == u.GetGeneration()
}

// condition returns the condition of type t in u's status.conditions, or
// nil.
func condition(u *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == t {
			return m
		}
	}
	return nil
}
