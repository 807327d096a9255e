package webapp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/record"

	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// StatusName is the name of the status resource.
const StatusName = "status"

// Reasons of the Ready and Degraded conditions.
const (
	// ReasonReconciled: every child matches the spec (Ready True, Degraded
	// False).
	ReasonReconciled = "Reconciled"
	// ReasonInvalidSpec: the operator cannot use the spec; the message says
	// why (Ready False, Degraded True). Not retried until the object
	// changes.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonReconcileFailed: a resource failed; the message holds its
	// error (Ready False, Degraded True). Retried with backoff.
	ReasonReconcileFailed = "ReconcileFailed"
)

// EventRecovered is the reason of the Normal event recorded when a WebApp
// whose spec was invalid is reconciled again. The framework records the
// other events: a Warning ReconcileFailed for each failed reconciliation
// (InvalidSpec ones included; client-go folds repeats together), a Normal
// Reconciled when an object recovers from failures it retried, and a
// Warning NoResourceSet for an unknown release.
const EventRecovered = "Recovered"

// maxMessage bounds condition and event messages, in bytes.
const maxMessage = 1024

// StatusChange is the update part of the status resource's patch: the
// status to write, with the resourceVersion it was computed from (a
// precondition of the write).
type StatusChange struct {
	Namespace string
	Name      string
	From      v1alpha1.WebAppStatus
	To        v1alpha1.WebAppStatus

	resourceVersion string
}

// Describe returns the change as lines of a diff-like listing, one per
// changed condition or field.
func (c *StatusChange) Describe() []string {
	lines := []string{fmt.Sprintf("~ update WebApp %s/%s status", c.Namespace, c.Name)}
	if c.From.ObservedGeneration != c.To.ObservedGeneration {
		lines = append(lines, fmt.Sprintf("    status.observedGeneration: %d -> %d", c.From.ObservedGeneration, c.To.ObservedGeneration))
	}
	for _, to := range c.To.Conditions {
		from := meta.FindStatusCondition(c.From.Conditions, to.Type)
		if from != nil && sameCondition(*from, to) {
			continue
		}
		lines = append(lines, fmt.Sprintf("    status.conditions[%s]: %s -> %s", to.Type, showCondition(from), showCondition(&to)))
	}
	return lines
}

func showCondition(c *metav1.Condition) string {
	if c == nil {
		return "(none)"
	}
	s := string(c.Status) + " (" + c.Reason
	if c.Message != "" {
		s += ": " + strconv.Quote(truncate(c.Message, 80))
	}
	return s + ")"
}

// statusOps is the crud.Ops of the status resource, last in every chain:
// when it runs, every child resource succeeded, so it sets Ready True and
// Degraded False for the observed generation (failures are written by
// reportingResource).
type statusOps struct {
	status  *statusWriter
	release string
}

var _ crud.Ops = (*statusOps)(nil)

func (o *statusOps) Name() string { return StatusName }

// GetCurrentState returns the object's status as a *v1alpha1.WebAppStatus.
func (o *statusOps) GetCurrentState(_ context.Context, obj any) (any, error) {
	st := statusOf(obj)
	return &st, nil
}

// GetDesiredState returns the status after a successful reconciliation, or
// a nil *v1alpha1.WebAppStatus when the object is being deleted.
func (o *statusOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	if deleting(obj) {
		return (*v1alpha1.WebAppStatus)(nil), nil
	}
	w, err := validWebAppFrom(obj)
	if err != nil {
		return nil, err
	}
	children := "ConfigMap and Deployment match"
	if o.release == Release2 {
		children = "ConfigMap, Deployment and Service match"
	}
	msg := fmt.Sprintf("release %s: %s the spec", o.release, children)
	st := withConditions(statusOf(obj), w.Generation,
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: ReasonReconciled, Message: msg},
		metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: ReasonReconciled, Message: "the last reconciliation succeeded"},
	)
	return &st, nil
}

// NewUpdatePatch updates the status when a condition's status, reason,
// message or observed generation, or the observed generation, differ; an
// unchanged status is not written, so writing it never triggers another
// write.
func (o *statusOps) NewUpdatePatch(_ context.Context, obj, currentState, desiredState any) (*crud.Patch, error) {
	current, desired, err := states[v1alpha1.WebAppStatus](currentState, desiredState)
	if err != nil || desired == nil || current == nil {
		return nil, err
	}
	patch := crud.NewPatch()
	if sameStatus(*current, *desired) {
		return patch, nil
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	patch.SetUpdateChange(&StatusChange{
		Namespace: m.GetNamespace(), Name: m.GetName(),
		From: *current, To: *desired,
		resourceVersion: m.GetResourceVersion(),
	})
	return patch, nil
}

// NewDeletePatch changes nothing: the status of an object being deleted
// does not matter.
func (o *statusOps) NewDeletePatch(context.Context, any, any, any) (*crud.Patch, error) {
	return nil, nil
}

// ApplyCreateChange is never called: the patches hold no create part.
func (o *statusOps) ApplyCreateChange(context.Context, any, any) error { return nil }

// ApplyDeleteChange is never called: the patches hold no delete part.
func (o *statusOps) ApplyDeleteChange(context.Context, any, any) error { return nil }

// ApplyUpdateChange writes the status and, when Degraded goes from True with
// reason InvalidSpec to False, records a Recovered event (the framework
// does not retry permanent errors, so it records no recovery for them).
func (o *statusOps) ApplyUpdateChange(ctx context.Context, obj, change any) error {
	c, ok := change.(*StatusChange)
	if !ok || c == nil {
		return fmt.Errorf("change is %T, want *webapp.StatusChange", change)
	}
	if err := o.status.write(ctx, c); err != nil {
		return err
	}
	if d := meta.FindStatusCondition(c.From.Conditions, v1alpha1.ConditionDegraded); d != nil && d.Status == metav1.ConditionTrue && d.Reason == ReasonInvalidSpec {
		if ro, ok := obj.(runtime.Object); ok {
			o.status.recorder.Event(ro, corev1.EventTypeNormal, EventRecovered, truncate("the spec is valid again; it was not: "+d.Message, maxMessage))
		}
	}
	return nil
}

// statusWriter writes WebApp statuses. It is shared by the status resource
// and reportingResource.
type statusWriter struct {
	client   dynamic.Interface
	recorder record.EventRecorder
	logger   log.Logger
}

// write patches the status subresource with a JSON merge patch carrying the
// resourceVersion c was computed from. A conflict (the object changed
// since) or a missing object is not an error: the change that caused it
// brings another reconciliation, and the status is computed again then; a
// requeue is asked for as well, in case the newer version was already
// reconciled.
func (s *statusWriter) write(ctx context.Context, c *StatusChange) error {
	body, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"resourceVersion": c.resourceVersion},
		"status":   c.To,
	})
	if err != nil {
		return fmt.Errorf("encode status: %w", err)
	}
	res, err := s.client.Resource(v1alpha1.GroupVersionResource).Namespace(c.Namespace).
		Patch(ctx, c.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: ManagedBy}, "status")
	if err == nil {
		// The Framework waits for its cache to show this write before it
		// reconciles the WebApp again, so that a child's event arriving
		// first does not compute the status from the old object.
		resourceversioncontext.SetResourceVersion(ctx, res.GetResourceVersion())
	}
	switch {
	case apierrors.IsConflict(err):
		level.Debug(s.logger).Log("msg", "status changed meanwhile; will compute it again", "object", c.Namespace+"/"+c.Name)
		requeuecontext.SetRequeueAfter(ctx, time.Second)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("patch status: %w", err)
	}
	return nil
}

// fail records a failed reconciliation of obj: Ready False and Degraded
// True with reason and the error's message, written only when they change.
// Its own failures are logged, not returned: the caller returns the
// original error.
func (s *statusWriter) fail(ctx context.Context, obj any, reason string, cause error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	msg := truncate(cause.Error(), maxMessage)
	current := statusOf(obj)
	desired := withConditions(current, m.GetGeneration(),
		metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg},
		metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg},
	)
	if sameStatus(current, desired) {
		return
	}
	err = s.write(ctx, &StatusChange{
		Namespace: m.GetNamespace(), Name: m.GetName(),
		From: current, To: desired,
		resourceVersion: m.GetResourceVersion(),
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		level.Warn(s.logger).Log("msg", "cannot write failed status", "object", objectKey(obj), "err", err)
	}
}

// statusOf returns a copy of obj's status: from a *v1alpha1.WebApp, or
// decoded as far as possible from an *unstructured.Unstructured.
func statusOf(obj any) v1alpha1.WebAppStatus {
	switch o := obj.(type) {
	case *v1alpha1.WebApp:
		return *o.Status.DeepCopy()
	case *unstructured.Unstructured:
		var st v1alpha1.WebAppStatus
		if m, ok, _ := unstructured.NestedMap(o.Object, "status"); ok {
			func() {
				defer func() { _ = recover() }()
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &st); err != nil {
					st = v1alpha1.WebAppStatus{}
				}
			}()
		}
		return st
	default:
		return v1alpha1.WebAppStatus{}
	}
}

// withConditions returns st with observedGeneration and the conditions set
// to generation and conds (keeping other condition types). A condition's
// lastTransitionTime changes only when its status does.
func withConditions(st v1alpha1.WebAppStatus, generation int64, conds ...metav1.Condition) v1alpha1.WebAppStatus {
	st.ObservedGeneration = generation
	st.Conditions = append([]metav1.Condition(nil), st.Conditions...)
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	for _, c := range conds {
		c.ObservedGeneration = generation
		c.LastTransitionTime = now
		if old := meta.FindStatusCondition(st.Conditions, c.Type); old != nil && old.Status == c.Status && !old.LastTransitionTime.IsZero() {
			c.LastTransitionTime = old.LastTransitionTime
		}
		meta.SetStatusCondition(&st.Conditions, c)
	}
	return st
}

// sameStatus reports whether a and b agree on the observed generation and
// on the type, status, reason, message and observed generation of every
// condition of b.
func sameStatus(a, b v1alpha1.WebAppStatus) bool {
	if a.ObservedGeneration != b.ObservedGeneration {
		return false
	}
	for _, c := range b.Conditions {
		old := meta.FindStatusCondition(a.Conditions, c.Type)
		if old == nil || !sameCondition(*old, c) {
			return false
		}
	}
	return true
}

func sameCondition(a, b metav1.Condition) bool {
	return a.Type == b.Type && a.Status == b.Status && a.Reason == b.Reason &&
		a.Message == b.Message && a.ObservedGeneration == b.ObservedGeneration
}
