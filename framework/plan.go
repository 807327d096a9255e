package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// ResourcePlan is what one resource would change, as computed by Plan.
type ResourcePlan struct {
	// Resource is the resource's name.
	Resource string `json:"resource"`
	// Create, Update and Delete are the patch parts the resource would apply;
	// nil when the part is not set.
	Create any `json:"create,omitempty"`
	Update any `json:"update,omitempty"`
	Delete any `json:"delete,omitempty"`
	// Unsupported is true for a resource that cannot plan (it is not a crud
	// resource, nor wraps one); it is skipped, never run.
	Unsupported bool `json:"unsupported,omitempty"`
}

// Changes reports whether the plan would change anything.
func (p ResourcePlan) Changes() bool {
	return p.Create != nil || p.Update != nil || p.Delete != nil
}

// planner is implemented by crud.Resource: the read-only half of
// EnsureCreated or EnsureDeleted.
type planner interface {
	Plan(ctx context.Context, obj any, deleting bool) (*crud.Patch, error)
}

// unwrapper is implemented by resource wrappers (retry, metrics).
type unwrapper interface {
	Unwrap() resource.Interface
}

// Plan is the dry run of a reconciliation: for each resource in order it runs
// the read-only half of a crud resource (GetCurrentState, GetDesiredState and
// NewUpdatePatch, or NewDeletePatch when obj has a deletionTimestamp) and
// returns the changes each would apply. It applies nothing. Wrapped crud
// resources are unwrapped; other resources are reported as Unsupported and
// not run.
//
// Plan is only as read-only as the Ops: an Ops that writes in
// GetCurrentState, GetDesiredState or a New*Patch step is the author's bug.
// Each resource is planned against the current state of the world, so a
// resource whose desired state depends on what an earlier resource would
// create sees the world before that creation.
func Plan(ctx context.Context, obj any, resources []resource.Interface) ([]ResourcePlan, error) {
	deleting := false
	if acc, err := meta.Accessor(obj); err == nil {
		deleting = acc.GetDeletionTimestamp() != nil
	}
	plans := make([]ResourcePlan, 0, len(resources))
	for _, r := range resources {
		p := ResourcePlan{Resource: r.Name()}
		pl := findPlanner(r)
		if pl == nil {
			p.Unsupported = true
			plans = append(plans, p)
			continue
		}
		patch, err := pl.Plan(ctx, obj, deleting)
		if err != nil {
			return plans, &ExecutionError{Resource: r.Name(), Operation: "plan", Err: err}
		}
		if patch != nil {
			p.Create, _ = patch.CreateChange()
			p.Update, _ = patch.UpdateChange()
			p.Delete, _ = patch.DeleteChange()
		}
		plans = append(plans, p)
	}
	return plans, nil
}

func findPlanner(r resource.Interface) planner {
	for r != nil {
		if p, ok := r.(planner); ok {
			return p
		}
		u, ok := r.(unwrapper)
		if !ok {
			return nil
		}
		r = u.Unwrap()
	}
	return nil
}

// ChangeDescriber is implemented by patch changes that can say in a few
// lines what they would change ("replicas: 2 -> 3"). FormatPlans, the debug
// endpoint and plan listings use it; without it a change is shown as JSON.
type ChangeDescriber interface {
	Describe() []string
}

// DescribeChange returns readable lines for a patch change: its Describe
// when it is a ChangeDescriber, its String when it is a fmt.Stringer, and
// otherwise its JSON, indented (or its Go value when it does not marshal).
func DescribeChange(change any) []string {
	switch c := change.(type) {
	case ChangeDescriber:
		return c.Describe()
	case fmt.Stringer:
		return strings.Split(c.String(), "\n")
	}
	data, err := json.MarshalIndent(change, "", "  ")
	if err != nil {
		return []string{fmt.Sprintf("%+v", change)}
	}
	return strings.Split(string(data), "\n")
}

// FormatPlans writes plans as a readable, diff-like listing: one block per
// resource, "+ create", "~ update" and "- delete" followed by the change's
// lines (see DescribeChange), "= no changes" when there is nothing to do.
func FormatPlans(b *strings.Builder, plans []ResourcePlan) {
	for _, p := range plans {
		fmt.Fprintf(b, "resource %s\n", p.Resource)
		switch {
		case p.Unsupported:
			b.WriteString("  ? not a crud resource: cannot plan\n")
			continue
		case !p.Changes():
			b.WriteString("  = no changes\n")
			continue
		}
		writeChange(b, "+ create", p.Create)
		writeChange(b, "~ update", p.Update)
		writeChange(b, "- delete", p.Delete)
	}
}

func writeChange(b *strings.Builder, label string, change any) {
	if change == nil {
		return
	}
	fmt.Fprintf(b, "  %s\n", label)
	for _, line := range DescribeChange(change) {
		fmt.Fprintf(b, "      %s\n", line)
	}
}
