package child

import (
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Action is what a [Change] does to a child object.
type Action string

// The actions of a Change.
const (
	// ActionCreate applies a child that the cache does not hold.
	ActionCreate Action = "create"
	// ActionUpdate applies a child whose owned fields differ.
	ActionUpdate Action = "update"
	// ActionDelete deletes a child, with a UID precondition.
	ActionDelete Action = "delete"
)

// Field is one field of a child that a change sets: its path
// ("spec.template.spec.containers[web].image": map keys, merge keys and list
// indexes in brackets), its current value and its desired value, formatted
// for people ("(none)" for an absent value, strings quoted, structs and
// lists as JSON, long values shortened).
type Field struct {
	// Path is the field's path, as above.
	Path string `json:"path"`
	// From is the current value, "(none)" when the child lacks it (and
	// for every field of a create).
	From string `json:"from"`
	// To is the desired value.
	To string `json:"to"`
}

// Change is the create, update or delete of one child object. For a create
// Fields lists every field the resource applies; for an update, the owned
// fields that differ; for a delete, none. It is what the patch parts of a
// child resource hold (in a [Changes]); plans and traces show it with
// Describe.
type Change struct {
	// Action is what the change does: ActionCreate, ActionUpdate or
	// ActionDelete.
	Action Action `json:"action"`
	// Kind is the child's kind (Config.GVK.Kind).
	Kind string `json:"kind"`
	// Namespace is the child's namespace; empty for a cluster-scoped
	// child.
	Namespace string `json:"namespace,omitempty"`
	// Name is the child's name.
	Name string `json:"name"`
	// UID is the current object's UID: the precondition of a delete.
	UID types.UID `json:"uid,omitempty"`
	// Fields are the fields the change sets (see above).
	Fields []Field `json:"fields,omitempty"`
	// More counts the differing fields left out of Fields (at most 30 are
	// listed).
	More int `json:"more,omitempty"`

	// body is the apply payload of a create or update, or, with
	// relabel, the JSON merge patch of the child's owned labels and owner
	// references (see relabelChange).
	body    []byte
	relabel bool
	// readFirst, set on a create when Config.Matches and OwnerLabels are,
	// is the desired child (with its labels and controller reference):
	// the create step reads the child first, and relabels one that
	// exists and that Matches accepts instead of applying it (see
	// ops.readFirst).
	readFirst metav1.Object
	// learnFrom, set on the apply of a desired child holding a pointer to
	// an empty struct that the current one lacks, is that desired child:
	// the paths where the answer lacks it too are recorded as dropped by
	// the API server (see droppedPaths).
	learnFrom metav1.Object
	// wait collects the not-ready children of the patch; the last change
	// applied signals the wait.
	wait *waitState
	last bool
}

// Describe returns one line per field, "deployment demo/web: spec.replicas
// 2 → 3" ("(none) → 3" for a create), or a single line for a delete
// ("deployment demo/web: delete (uid ...)") or a change without fields.
func (c *Change) Describe() []string {
	head := strings.ToLower(c.Kind) + " " + c.Namespace + "/" + c.Name
	if c.Namespace == "" {
		head = strings.ToLower(c.Kind) + " " + c.Name
	}
	switch {
	case c.Action == ActionDelete:
		return []string{fmt.Sprintf("%s: delete (uid %s)", head, c.UID)}
	case len(c.Fields) == 0:
		return []string{fmt.Sprintf("%s: %s", head, c.Action)}
	}
	lines := make([]string, 0, len(c.Fields)+1)
	for _, f := range c.Fields {
		lines = append(lines, fmt.Sprintf("%s: %s %s → %s", head, f.Path, f.From, f.To))
	}
	if c.More > 0 {
		lines = append(lines, fmt.Sprintf("%s: … and %d more fields", head, c.More))
	}
	return lines
}

// String returns the lines of Describe joined by newlines.
func (c *Change) String() string { return strings.Join(c.Describe(), "\n") }

// Changes are the changes of one patch part of a child resource: one per
// child created, updated or deleted. A patch part is set only when it holds
// at least one change.
type Changes []*Change

// PlanWaits implements framework.PlanWaiter: when the patch's children
// are written, the resource waits for the desired children it found, before
// writing, not ready or being deleted ("deployment ns/a not ready: being
// deleted"), and asks for a requeue after Config.WaitDelay; what is ""
// when it found none (whether a child written is ready depends on the API
// server's answer, which a plan does not get).
func (cs Changes) PlanWaits() (what string, requeueAfter time.Duration) {
	for _, c := range cs {
		if c.wait != nil && len(c.wait.reasons) > 0 {
			return waitMessage(c.wait.reasons), c.wait.delay
		}
	}
	return "", 0
}

// Describe returns the lines of every change's Describe, in order.
func (cs Changes) Describe() []string {
	var lines []string
	for _, c := range cs {
		lines = append(lines, c.Describe()...)
	}
	return lines
}
