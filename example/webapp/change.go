package webapp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/operator"
)

// Action is what a change does to a child object.
type Action string

// The actions of a ChildChange.
const (
	ActionCreate Action = "create"
	ActionUpdate Action = "update"
	ActionDelete Action = "delete"
)

// FieldChange is one field of a child object that a change sets: its path,
// its current value and its desired value, formatted for people ("(none)"
// for an absent value; long strings shortened).
type FieldChange struct {
	Path string
	From string
	To   string
}

// ChildChange is the create, update or delete part of the patch of one of
// this package's child resources (ConfigMap, Deployment, Service). The
// resource's Apply step acts on it; the plan command prints it with
// Describe. For a create, Fields lists the fields the operator sets; for an
// update, the fields that differ; for a delete, nothing.
type ChildChange struct {
	Action    Action
	Kind      string
	Namespace string
	Name      string
	Fields    []FieldChange

	// object is the desired object (create, update) or the current one
	// (delete), never shared with a cache.
	object runtime.Object
	// uid is the current object's UID, a precondition of a delete.
	uid string
}

// Describe returns the change as lines of a diff-like listing: a header
// ("+ create ConfigMap ns/name", "~ update ...", "- delete ...") and one
// indented line per field ("spec.replicas: 1 -> 3").
func (c *ChildChange) Describe() []string {
	sign := map[Action]string{ActionCreate: "+", ActionUpdate: "~", ActionDelete: "-"}[c.Action]
	lines := []string{fmt.Sprintf("%s %s %s %s/%s", sign, c.Action, c.Kind, c.Namespace, c.Name)}
	for _, f := range c.Fields {
		if c.Action == ActionCreate {
			lines = append(lines, fmt.Sprintf("    %s: %s", f.Path, f.To))
			continue
		}
		lines = append(lines, fmt.Sprintf("    %s: %s -> %s", f.Path, f.From, f.To))
	}
	return lines
}

// diff collects FieldChanges.
type diff []FieldChange

// value compares one field; from and to are formatted with show.
func (d *diff) value(path string, from, to any) {
	if equality.Semantic.DeepEqual(from, to) {
		return
	}
	*d = append(*d, FieldChange{Path: path, From: show(from), To: show(to)})
}

// set records a field of an object to create.
func (d *diff) set(path string, to any) {
	*d = append(*d, FieldChange{Path: path, From: show(nil), To: show(to)})
}

// keys compares the entries of the given keys in two string maps (labels,
// annotations, data): the keys the operator owns. Keys the desired map lacks
// must be absent; keys of current outside owned are somebody else's.
func (d *diff) keys(path string, current, desired map[string]string, owned ...string) {
	for _, k := range owned {
		cv, cok := current[k]
		dv, dok := desired[k]
		if cok == dok && cv == dv {
			continue
		}
		var from, to any
		if cok {
			from = cv
		}
		if dok {
			to = dv
		}
		*d = append(*d, FieldChange{Path: fmt.Sprintf("%s[%s]", path, strconv.Quote(k)), From: show(from), To: show(to)})
	}
}

// owner compares the controller owner reference: desired holds the one
// reference the operator sets, which current must hold.
func (d *diff) owner(current, desired []metav1.OwnerReference) {
	if len(desired) == 0 || ownedBy(current, desired[0]) {
		return
	}
	*d = append(*d, FieldChange{
		Path: "metadata.ownerReferences",
		From: "(no controller reference to this " + desired[0].Kind + ")",
		To:   desired[0].Kind + " " + desired[0].Name + " (uid " + string(desired[0].UID) + ")",
	})
}

// setKeys records the entries of a string map of an object to create,
// sorted by key.
func (d *diff) setKeys(path string, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		d.set(fmt.Sprintf("%s[%s]", path, strconv.Quote(k)), m[k])
	}
}

// show formats a field value for a FieldChange.
func show(v any) string {
	switch x := v.(type) {
	case nil:
		return "(none)"
	case *int32:
		if x == nil {
			return "(none)"
		}
		return strconv.Itoa(int(*x))
	case string:
		if len(x) > 60 {
			return fmt.Sprintf("%q (%d bytes)", truncate(x, 40), len(x))
		}
		return strconv.Quote(x)
	case fmt.Stringer:
		return x.String()
	default:
		b, err := json.Marshal(x)
		if err != nil {
			return fmt.Sprint(x)
		}
		if s := string(b); s != "null" {
			return s
		}
		return "(none)"
	}
}

// applyPayload returns the JSON body of a server-side apply request for obj
// (a typed object holding only the fields the operator owns): obj with
// apiVersion and kind set and without the fields that a typed object
// always carries but the operator does not own (metadata.creationTimestamp,
// status).
func applyPayload(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", gvk.Kind, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "strategy")
	b, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", gvk.Kind, err)
	}
	return b, nil
}

// typedClient is the part of a client-go typed client for one kind in one
// namespace (ConfigMapInterface, ServiceInterface, DeploymentInterface) that
// childWriter uses.
type typedClient[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*T, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// newChildWriter returns the childWriter of kind gvk (resource gr) whose
// objects are written through client(namespace). Each apply is announced to
// writes (when not nil), so that its watch event does not wake the WebApp
// again. A non-empty propagation is set on every delete.
func newChildWriter[T any, C typedClient[T]](gvk schema.GroupVersionKind, gr schema.GroupResource, writes *operator.OwnWrites, client func(namespace string) C, propagation ...metav1.DeletionPropagation) childWriter {
	return childWriter{
		gvk: gvk,
		apply: func(ctx context.Context, namespace, name string, body []byte) error {
			if writes == nil {
				_, err := client(namespace).Patch(ctx, name, types.ApplyPatchType, body, applyOptions())
				return err
			}
			done := writes.Begin(gr, namespace, name)
			obj, err := client(namespace).Patch(ctx, name, types.ApplyPatchType, body, applyOptions())
			answer, _ := any(obj).(metav1.Object)
			done(answer, err)
			return err
		},
		delete: func(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error {
			if len(propagation) > 0 {
				opts.PropagationPolicy = &propagation[0]
			}
			return client(namespace).Delete(ctx, name, opts)
		},
	}
}

// childWriter is the apply half of a child resource's crud.Ops: it writes
// the object of a *ChildChange with server-side apply (create and update
// alike: the operator's owned fields win) and deletes with the change's UID
// precondition; an object that is already gone is not an error. The child
// resources embed it with the typed client calls of their kind.
type childWriter struct {
	gvk    schema.GroupVersionKind
	apply  func(ctx context.Context, namespace, name string, body []byte) error
	delete func(ctx context.Context, namespace, name string, opts metav1.DeleteOptions) error
}

// ApplyCreateChange creates the child with server-side apply, which also
// succeeds when it exists already.
func (w childWriter) ApplyCreateChange(ctx context.Context, _, change any) error {
	return w.write(ctx, change)
}

// ApplyUpdateChange applies the child's owned fields with server-side apply.
func (w childWriter) ApplyUpdateChange(ctx context.Context, _, change any) error {
	return w.write(ctx, change)
}

func (w childWriter) write(ctx context.Context, change any) error {
	c, err := childChange(change)
	if err != nil {
		return err
	}
	body, err := applyPayload(c.object, w.gvk)
	if err != nil {
		return err
	}
	return w.apply(ctx, c.Namespace, c.Name, body)
}

// ApplyDeleteChange deletes the child; one that is already gone is no error.
func (w childWriter) ApplyDeleteChange(ctx context.Context, _, change any) error {
	c, err := childChange(change)
	if err != nil {
		return err
	}
	return ignoreNotFound(w.delete(ctx, c.Namespace, c.Name, deleteOptions(c)))
}
