package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/internal/signal"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

// ResourcePlan is what one resource would change, as computed by Plan.
type ResourcePlan struct {
	// Resource is the resource's name.
	Resource string `json:"resource"`
	// Create is the create part of the resource's patch (its
	// NewUpdatePatch's, or NewDeletePatch's when ObjectPlan.Deleting;
	// crud.Patch.CreateChange): what a reconciliation now would pass to
	// its ApplyCreateChange, first. nil when the part is not set: nothing
	// to create.
	Create any `json:"create,omitempty"`
	// Update is the update part of the same patch (crud.Patch.UpdateChange):
	// what a reconciliation now would pass to its ApplyUpdateChange, after
	// the create. nil when the part is not set: nothing to update.
	Update any `json:"update,omitempty"`
	// Delete is the delete part of the same patch (crud.Patch.DeleteChange):
	// what a reconciliation now would pass to its ApplyDeleteChange, last.
	// nil when the part is not set: nothing to delete.
	Delete any `json:"delete,omitempty"`
	// Unsupported is true for a resource that cannot plan (it is not a crud
	// resource, nor wraps one); it is skipped, never run.
	Unsupported bool `json:"unsupported,omitempty"`
	// Waits, when not empty, says what the resource waits for: planning it
	// canceled the reconciliation without an error (a child that is not
	// ready, a guard), so a reconciliation now would apply nothing of this
	// resource, run no later resource and come back later; or, with
	// changes, a part of its patch is a PlanWaiter that waits after them
	// (resource/child creating one child while another is being deleted),
	// so a reconciliation now would apply them, then run no later resource
	// and come back later. It is the
	// message of the Reconciling condition the resource set
	// (conditioncontext), or "canceled the reconciliation" when it set
	// none (for a PlanWaiter: what it returns), followed by " (again in
	// 5s)" when it asked for a requeue.
	// Plan then stops: the resources after it are not planned.
	Waits string `json:"waits,omitempty"`
	// Skipped is true when planning the resource canceled the resource
	// itself (resourcecanceledcontext): a reconciliation now would apply
	// none of its changes, and the chain goes on.
	Skipped bool `json:"skipped,omitempty"`
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

// PlanWaiter is implemented by patch parts (crud.Patch's create, update or
// delete change) of a resource that, after applying them, cancels the
// reconciliation waiting for something it knows of before applying
// anything: resource/child's Changes when a desired child needs no write
// but is not ready, or is being deleted, beside the children it writes.
// Plan calls PlanWaits on each part of a patch: a wait makes the resource
// the last one planned, with its changes and ResourcePlan.Waits.
type PlanWaiter interface {
	// PlanWaits returns what the resource will wait for once it has
	// applied the patch, as its Reconciling condition's message will say,
	// and the requeue it will ask for (0: none); what is "" when it knows
	// of no wait before applying. Plan calls it; it must not modify the
	// change nor write anything, as plans are read-only.
	PlanWaits() (what string, requeueAfter time.Duration)
}

// planWaits returns ResourcePlan.Waits of a patch whose parts are
// PlanWaiters that wait, "" when none does.
func planWaits(parts ...any) string {
	for _, part := range parts {
		w, ok := part.(PlanWaiter)
		if !ok {
			continue
		}
		if what, after := w.PlanWaits(); what != "" {
			if after > 0 {
				what += fmt.Sprintf(" (again in %s)", after)
			}
			return what
		}
	}
	return ""
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
// The resources run with the context signals of a reconciliation, as
// ProcessUpdate gives them: the signals ctx holds are used as they are (a
// resource set's InitCtx may have set them, or added its own, and the
// resources act on them in the plan as in the reconciliation), and those
// it lacks are added; each resource gets a fresh resourcecanceledcontext
// signal. A plan thus stops where a reconciliation would: a resource
// that cancels the reconciliation while planning (resource/child waiting
// for a child to become ready, a guard) is the last one planned, with
// ResourcePlan.Waits saying what it waits for; one that cancels itself is
// Skipped. Neither has changes in the plan, as neither would apply any;
// but a resource whose patch is a PlanWaiter that waits (resource/child
// writing some children while another is being deleted) is the last one
// planned with both its changes and Waits, as it would apply them and then
// wait.
// The plan has a conditioncontext store of its own, empty: what its
// resources Set (a Reconciling condition's message, for Waits) stays in it,
// and conditioncontext.Get finds only that, as under ProcessUpdate with
// conditioncontext.NewContext. [Framework.Plan] and a Framework's dry run,
// with Config.Conditions, start it from the object's conditions instead,
// as the Framework's reconciliations do, before the set's InitCtx runs, so
// that InitCtx or a resource that decides from one (a Guard's condition)
// plans what it would do; but for an object already gone, whose delete
// chain runs without conditions.
// When ctx's reconciliation is canceled before the first resource (by
// InitCtx), no resource is planned, as none would run.
//
// A panic in a resource (its Name's too) is returned as its error (a
// *PanicError, matching ErrPanic), as a reconciliation would; a nil entry of resources is an
// error matching ErrInvalidConfig.
//
// Plan is only as read-only as the Ops: an Ops that writes in
// GetCurrentState, GetDesiredState or a New*Patch step is the author's bug.
// Each resource is planned against the current state of the world, so a
// resource whose desired state depends on what an earlier resource would
// create sees the world before that creation.
func Plan(ctx context.Context, obj any, resources []resource.Interface) ([]ResourcePlan, error) {
	return plan(conditioncontext.NewContext(signal.WithMissing(ctx)), obj, resources)
}

// planConditions returns ctx holding the conditions that a plan of obj
// with the Framework's resources starts from, for the set's InitCtx and
// the resources, and true; ctx and false when the plan starts from none.
// With Config.Conditions its reconciliations (InitCtx included) find the
// object's conditions with conditioncontext.Get, and so do its plans (in a
// store of the plan's own, without a lock: a plan writes nothing, and what
// InitCtx and the resources set stays in it). The delete chain of an
// object already gone (gone: a tombstone) runs without conditions
// (conditioncontext.ErrNoConditions), and its plan starts from none.
func (f *Framework) planConditions(ctx context.Context, obj any, gone bool) (context.Context, bool) {
	if !f.plansConditions || gone {
		return ctx, false
	}
	current, _, _ := readStatus(obj) // unreadable: none, as the reconciliation's error says
	return conditioncontext.NewGuardedContext(ctx, current, nil), true
}

// planWith plans with the Framework's resources on ctx, which InitCtx
// returned: on the conditions that planConditions put in it (withConds),
// or else on a store of the plan's own, empty, as Plan does.
func planWith(ctx context.Context, obj any, resources []resource.Interface, withConds bool) ([]ResourcePlan, error) {
	if !withConds {
		return Plan(ctx, obj, resources)
	}
	return plan(signal.WithMissing(ctx), obj, resources)
}

// plan is Plan on a context that already holds the plan's conditions.
func plan(ctx context.Context, obj any, resources []resource.Interface) ([]ResourcePlan, error) {
	deleting := false
	if acc, err := meta.Accessor(obj); err == nil {
		deleting = acc.GetDeletionTimestamp() != nil
	}
	plans := make([]ResourcePlan, 0, len(resources))
	for i, r := range resources {
		if resource.IsNil(r) {
			return plans, fmt.Errorf("%w: resources[%d] is nil", ErrInvalidConfig, i)
		}
		if reconciliationcanceledcontext.IsCanceled(ctx) {
			return plans, nil // canceled before r: a reconciliation runs no more
		}
		name, err := resourceName(r, i)
		if err != nil {
			return plans, &ExecutionError{Resource: name, Operation: "plan", Err: err}
		}
		p := ResourcePlan{Resource: name}
		pl := findPlanner(r)
		if pl == nil {
			p.Unsupported = true
			plans = append(plans, p)
			continue
		}
		rctx := signal.WithFlag(ctx, signal.ResourceCanceled)
		var patch *crud.Patch
		err = recovered(name, func() (err error) {
			patch, err = pl.Plan(rctx, obj, deleting)
			return err
		})
		if err != nil {
			return plans, &ExecutionError{Resource: name, Operation: "plan", Err: err}
		}
		switch {
		case reconciliationcanceledcontext.IsCanceled(rctx):
			p.Waits = waitsFor(rctx)
			return append(plans, p), nil
		case resourcecanceledcontext.IsCanceled(rctx):
			p.Skipped = true
		case patch != nil:
			p.Create, _ = patch.CreateChange()
			p.Update, _ = patch.UpdateChange()
			p.Delete, _ = patch.DeleteChange()
			if p.Waits = planWaits(p.Create, p.Update, p.Delete); p.Waits != "" {
				return append(plans, p), nil
			}
		}
		plans = append(plans, p)
	}
	return plans, nil
}

// waitsFor describes why the reconciliation of ctx was canceled: the
// Reconciling condition's message, and the requeue asked for.
func waitsFor(ctx context.Context) string {
	why := "canceled the reconciliation"
	// Set in this plan: the object's own Reconciling (Get's fallback) is
	// about an earlier reconciliation.
	for _, c := range conditioncontext.List(ctx) {
		if c.Type == conditioncontext.Reconciling && c.Status == metav1.ConditionTrue && c.Message != "" {
			why = c.Message
		}
	}
	if d, ok := requeuecontext.RequeueAfter(ctx); ok && d > 0 {
		why += fmt.Sprintf(" (again in %s)", d)
	}
	return why
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
	// Describe returns the change's lines, for people. FormatPlans,
	// DescribeChange and the debug endpoint call it each time they show
	// the change: it must not modify the change nor write anything, as
	// plans are read-only.
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
// lines (see DescribeChange), "= no changes" when there is nothing to do,
// "… waits: <what>" for a resource that stops the chain waiting (its
// Waits; after its changes, when it has any) and "- skipped" for one that
// cancels itself.
func FormatPlans(b *strings.Builder, plans []ResourcePlan) {
	for _, p := range plans {
		fmt.Fprintf(b, "resource %s\n", p.Resource)
		switch {
		case p.Unsupported:
			b.WriteString("  ? not a crud resource: cannot plan\n")
			continue
		case p.Waits != "":
			writeChange(b, "+ create", p.Create)
			writeChange(b, "~ update", p.Update)
			writeChange(b, "- delete", p.Delete)
			fmt.Fprintf(b, "  … waits: %s\n", p.Waits)
			continue
		case p.Skipped:
			b.WriteString("  - skipped: the resource canceled itself\n")
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

// ObjectPlan is what a reconciliation of one object would change now, as
// computed by Framework.Plan.
type ObjectPlan struct {
	// Object is the object's key, "namespace/name" ("name" when
	// cluster-scoped).
	Object string `json:"object"`
	// ResourceSet is the name of the resource set planned; empty when none
	// handles the object (Err then matches ErrNoResourceSet).
	ResourceSet string `json:"resourceSet,omitempty"`
	// Deleting is true when the object has a deletionTimestamp: the plan is
	// the delete chain's.
	Deleting bool `json:"deleting,omitempty"`
	// Finalized is true when the object is being deleted without the
	// Framework's finalizer (Framework.Finalizer) although the Framework
	// adds it (Config.DisableFinalizers is not set, DryRun or not): its
	// delete chain ran already and removed the finalizer, or the object
	// was never reconciled. A reconciliation skips such an object (result
	// skipped), so nothing is planned: Resources is empty.
	Finalized bool `json:"finalized,omitempty"`
	// Resources are the plans of the set's resources in chain order, up to
	// the one whose error stopped the plan.
	Resources []ResourcePlan `json:"resources,omitempty"`
	// Err is the error that stops the plan where it would stop a
	// reconciliation (a resource's error, such as a permanent one for a
	// spec the resources cannot use, or ErrNoResourceSet); nil when the
	// whole chain was planned.
	Err error `json:"-"`
}

// Changes reports whether any resource of the plan would change anything.
func (p ObjectPlan) Changes() bool {
	for _, r := range p.Resources {
		if r.Changes() {
			return true
		}
	}
	return false
}

// Waits returns the resource that stops the plan waiting and what it waits
// for (its ResourcePlan.Waits); ok is false when no resource waits.
func (p ObjectPlan) Waits() (resource, what string, ok bool) {
	for _, r := range p.Resources {
		if r.Waits != "" {
			return r.Resource, r.Waits, true
		}
	}
	return "", "", false
}

// Format writes p to b: a header line with the object and its resource set
// ("demo/web (resource set release-2)", ", being deleted" added while it
// is), a line "  = skipped: ..." when the object is Finalized, its
// resources as FormatPlans writes them, indented by two spaces, and a line
// "  stops: <error>" (the error on one line) when Err is set.
func (p ObjectPlan) Format(b *strings.Builder) {
	b.WriteString(p.Object)
	if p.ResourceSet != "" {
		fmt.Fprintf(b, " (resource set %s)", p.ResourceSet)
	}
	if p.Deleting {
		b.WriteString(", being deleted")
	}
	b.WriteString("\n")
	if p.Finalized {
		b.WriteString("  = skipped: the operator's finalizer is gone (its delete chain ran already, or the object was never reconciled)\n")
	}
	var rb strings.Builder
	FormatPlans(&rb, p.Resources)
	for _, line := range strings.SplitAfter(rb.String(), "\n") {
		if line != "" {
			b.WriteString("  " + line)
		}
	}
	if p.Err != nil {
		fmt.Fprintf(b, "  stops: %s\n", strings.Join(strings.Fields(p.Err.Error()), " "))
	}
}

// Plan computes what a reconciliation of obj would change now, writing
// nothing: the package-level Plan over the resources of the resource set
// named set or, when set is empty, of the set the ResourceRouter picks for
// obj. It runs the set's InitCtx first, as a reconciliation does. The
// error, also in the result's Err, matches ErrNoResourceSet when no set
// handles obj (or none is named set); it is the router's error when more
// than one set does, InitCtx's when that fails, and otherwise the error of
// the resource that stops the chain, whose plans before it are in the
// result. A panic in a set's Handles or InitCtx is the error (a
// *PanicError, matching ErrPanic), as in a reconciliation. An object being
// deleted without the Framework's finalizer, which a reconciliation skips,
// plans nothing and is ObjectPlan.Finalized (unless
// Config.DisableFinalizers is set: then its delete chain is planned). Plan
// needs no Boot and may run concurrently with reconciliations, but the
// resources read what they read (their caches must have synced).
// Operator.Plan runs it for a one-off plan command.
func (f *Framework) Plan(ctx context.Context, obj any, set string) (ObjectPlan, error) {
	var p ObjectPlan
	if acc, err := meta.Accessor(obj); err == nil {
		p.Object, p.Deleting = acc.GetName(), acc.GetDeletionTimestamp() != nil
		if ns := acc.GetNamespace(); ns != "" {
			p.Object = ns + "/" + p.Object
		}
	}
	var rs *router.ResourceSet
	var err error
	if set == "" {
		rs, err = f.route(obj) // a panic in Handles as a *PanicError
	} else if rs = f.setNamed(set); rs == nil {
		err = fmt.Errorf("%w: no resource set is named %q", ErrNoResourceSet, set)
	}
	if err != nil {
		p.Err = err
		return p, err
	}
	p.ResourceSet = rs.Name()
	// With the set's InitCtx, as a reconciliation runs the chain: on the
	// signals of a reconciliation, fresh for the plan (none of the
	// caller's), which InitCtx may set, and on the plan's conditions.
	ctx, withConds := f.planConditions(signal.WithFresh(ctx), obj, false)
	if ctx, err = initCtx(ctx, rs, obj); err != nil {
		p.Err = err
		return p, p.Err
	}
	if p.Deleting && f.ownsFinalizer {
		acc, _ := meta.Accessor(obj) // Deleting: it has one
		if !slices.Contains(acc.GetFinalizers(), f.finalizer) {
			// A reconciliation skips it: its delete chain ran already,
			// or the object was never ours.
			p.Finalized = true
			return p, nil
		}
	}
	p.Resources, p.Err = planWith(ctx, obj, rs.Resources(), withConds)
	return p, p.Err
}

// Informer returns the informer the Framework reads its objects from
// (Config.Informer).
func (f *Framework) Informer() informer.Interface { return f.informer }

// setNamed returns the router's resource set named name, nil when none is.
func (f *Framework) setNamed(name string) *router.ResourceSet {
	for _, s := range f.router.ResourceSets() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}
