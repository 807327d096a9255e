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

// FormatPlans writes plans as a readable, diff-like listing: one block per
// resource, "+ create", "~ update", "- delete" lines with the changes as
// indented JSON, "= no changes" when there is nothing to do.
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
	data, err := json.MarshalIndent(change, "    ", "  ")
	if err != nil {
		fmt.Fprintf(b, "  %s %v\n", label, change)
		return
	}
	fmt.Fprintf(b, "  %s\n    %s\n", label, data)
}
