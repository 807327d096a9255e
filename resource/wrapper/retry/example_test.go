package retry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// noWait allows three retries without waiting, so that the examples run
// at once; leave Config.BackOffFactory nil for DefaultBackOffFactory.
func noWait() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) }

// updatePatch is a patch with an update part only.
func updatePatch(change string) *crud.Patch {
	p := crud.NewPatch()
	p.SetUpdateChange(change)
	return p
}

// ExampleNew retries the step of a crud resource that failed: the update
// times out twice and then succeeds, without the states being read again.
// Each retry is logged at warn level. (A timeout whose answer asks for a
// wait, a Retry-After of 1 second or more, is not retried in place: see
// After.)
func ExampleNew() {
	timeout := apierrors.NewTimeoutError("request did not complete within 60s", 0)
	ops := &crudtest.Ops{
		Resource: "deployment",
		Patch:    updatePatch("replicas: 3"),
		Errors:   map[string][]error{crud.StepApplyUpdateChange: {timeout, timeout, nil}},
	}
	inner, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		panic(err)
	}
	r, err := retry.New(retry.Config{
		Resource:       inner,
		BackOffFactory: noWait,
		Logger:         log.NewLogfmtLogger(os.Stdout),
	})
	if err != nil {
		panic(err)
	}

	fmt.Println("err:", r.EnsureCreated(context.Background(), nil))
	for _, step := range ops.Steps() {
		fmt.Println(step)
	}
	// Output:
	// level=warn resource=deployment msg=retrying operation="apply update change" attempt=1 backoff=0s err="Timeout: request did not complete within 60s"
	// level=warn resource=deployment msg=retrying operation="apply update change" attempt=2 backoff=0s err="Timeout: request did not complete within 60s"
	// err: <nil>
	// get current state
	// get desired state
	// new update patch
	// apply update change
	// apply update change
	// apply update change
}

// An error marked with Permanent is returned at once, and keeps its mark
// through the crud resource's wrapping, so that the framework does not
// hurry to retry it either.
func ExamplePermanent() {
	errQuota := errors.New("quota exceeded: 10 of 10 load balancers in use")
	ops := &crudtest.Ops{
		Resource: "load-balancer",
		Patch:    updatePatch("ports: [443]"),
		Errors:   map[string][]error{crud.StepApplyUpdateChange: {retry.Permanent(errQuota)}},
	}
	inner, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		panic(err)
	}
	r, err := retry.New(retry.Config{Resource: inner, BackOffFactory: noWait})
	if err != nil {
		panic(err)
	}

	err = r.EnsureCreated(context.Background(), nil)
	fmt.Println(err)
	fmt.Println("permanent:", retry.IsPermanent(err), "is quota:", errors.Is(err, errQuota))
	fmt.Println("update attempts:", ops.Count(crud.StepApplyUpdateChange))
	// Output:
	// load-balancer: apply update change: quota exceeded: 10 of 10 load balancers in use
	// permanent: true is quota: true
	// update attempts: 1
}

// DefaultRetryable retries what may go away by itself and not the API
// errors that the same request cannot fix, such as a conflict, which needs
// a fresh read of the object in a new reconciliation.
func ExampleDefaultRetryable() {
	deployments := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, err := range []error{
		apierrors.NewTimeoutError("request did not complete within 60s", 1),
		apierrors.NewTooManyRequests("client rate limiter", 1),
		errors.New("dial tcp 10.96.0.1:443: connect: connection refused"),
		apierrors.NewConflict(deployments, "web", errors.New("the object has been modified")),
		apierrors.NewForbidden(deployments, "web", errors.New("RBAC: access denied")),
	} {
		fmt.Printf("%-5t %v\n", retry.DefaultRetryable(err), err)
	}
	// Output:
	// true  Timeout: request did not complete within 60s
	// true  client rate limiter
	// true  dial tcp 10.96.0.1:443: connect: connection refused
	// false Operation cannot be fulfilled on deployments.apps "web": the object has been modified
	// false deployments.apps "web" is forbidden: RBAC: access denied
}

// A provider answered 429 with Retry-After: 30: the resource marks the
// error with After. The retry wrapper returns it at once, with its delay,
// instead of calling the provider again in 100ms; the framework then
// requeues the object after 30s, or after its backoff when that is longer,
// and reports the failure as any other.
func ExampleAfter() {
	errThrottled := errors.New("provider: 429 too many requests")
	ops := &crudtest.Ops{
		Resource: "dns-record",
		Patch:    updatePatch("value: 192.0.2.1"),
		Errors:   map[string][]error{crud.StepApplyUpdateChange: {retry.After(errThrottled, 30*time.Second)}},
	}
	inner, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		panic(err)
	}
	r, err := retry.New(retry.Config{Resource: inner, BackOffFactory: noWait})
	if err != nil {
		panic(err)
	}

	err = r.EnsureCreated(context.Background(), nil)
	d, ok := retry.DelayOf(err)
	fmt.Println(err)
	fmt.Println("wait:", d, ok, "is throttled:", errors.Is(err, errThrottled))
	fmt.Println("update attempts:", ops.Count(crud.StepApplyUpdateChange))
	// Output:
	// dns-record: apply update change: provider: 429 too many requests
	// wait: 30s true is throttled: true
	// update attempts: 1
}
