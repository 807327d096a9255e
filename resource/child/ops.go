package child

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/internal/conditions"
	"github.com/operatorkit/operatorkit/internal/printable"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/trace"
)

// ops is the crud.Ops of a child resource.
type ops[O, C Object] struct {
	config     Config[O, C]
	childType  reflect.Type // the struct type C points to
	apiVersion string
	logger     log.Logger
	mutation   interface{ Mutation(runtime.Object) }
	// owners finds an owner's children when the Cache exposes its
	// informer; nil when it does not (GetCurrentState scans the Cache).
	owners *ownerIndex
	// cacheNamespace is the only namespace the Cache holds, "" when it
	// holds all (or does not say).
	cacheNamespace string
	// selector is the Cache's label selector; nil when it selects every
	// object (or does not say).
	selector labels.Selector
	// unstructuredCache is set once the cache handed out an
	// *unstructured.Unstructured: answers are recorded in that form.
	unstructuredCache atomic.Bool
	// ownerAPIVersion is the apiVersion string of the owner's
	// GroupVersion last seen, so that building the owner reference does
	// not format it again for every reconciliation, nor parse again the
	// apiVersion of a typed owner (TypeMeta) without Config.OwnerGVK.
	ownerAPIVersion atomic.Pointer[apiVersionOf]
	// secret is set for Secret children: a Change names the data fields
	// that differ, not their values.
	secret bool
	// clusterScoped is set once an apply of a child in a namespace was
	// answered with a child in none: the kind is cluster-scoped, and a
	// namespaced owner cannot own its objects.
	clusterScoped atomic.Bool
	// dropped are the paths at which the API server dropped an empty
	// struct this resource applied: learnt from the answers of its applies
	// (learn), no drift when absent.
	dropped droppedPaths
}

// apiVersionOf is a GroupVersion with its string, and the apiVersion of a
// typed owner it was parsed from ("" when it was not).
type apiVersionOf struct {
	gv  schema.GroupVersion
	s   string
	raw string
}

// ownerAPIVersionOf returns gv.String(), formatted once for the owners' usual
// GroupVersion.
func (o *ops[O, C]) ownerAPIVersionOf(gv schema.GroupVersion) string {
	if last := o.ownerAPIVersion.Load(); last != nil && last.gv == gv {
		return last.s
	}
	s := gv.String()
	o.ownerAPIVersion.Store(&apiVersionOf{gv: gv, s: s})
	return s
}

var _ crud.Ops = (*ops[*metav1.PartialObjectMetadata, *metav1.PartialObjectMetadata])(nil)

// current is the current state, the children of the owner the cache
// holds, when there are none or more than one: an owner's one child is the
// state itself, a C, which costs no allocation (see states).
type current[C Object] struct {
	owned []C
}

// desired is the desired state when it is not one child (a C, as for
// current): no child, or DesiredSet's children; nil while the owner is
// being deleted.
type desired[C Object] struct {
	children []C
}

// Name implements crud.Ops: Config.Name.
func (o *ops[O, C]) Name() string { return o.config.Name }

// Claim implements resource.Claimer: the children this resource deletes
// when Desired no longer names them are those of its kind with its
// ManagedBy label (and a controller reference to the owner).
func (o *ops[O, C]) Claim() string {
	gk := o.config.GVK.GroupKind()
	kind := gk.Kind
	if gk.Group != "" {
		kind = gk.Group + "/" + gk.Kind
	}
	return fmt.Sprintf("%s children labelled %s=%s", kind, LabelManagedBy, o.config.ManagedBy)
}

// owner returns obj as an O.
func (o *ops[O, C]) owner(obj any) (O, error) {
	if w, ok := obj.(O); ok && !reflect.ValueOf(w).IsNil() {
		return w, nil
	}
	var zero O
	if u, ok := obj.(*unstructured.Unstructured); ok && u != nil {
		w := reflect.New(reflect.TypeFor[O]().Elem()).Interface().(O)
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, w); err != nil {
			return zero, retry.Permanent(fmt.Errorf("%w: convert owner %s %s/%s to %T: %w", ErrWrongType, u.GetKind(), u.GetNamespace(), u.GetName(), zero, err))
		}
		return w, nil
	}
	return zero, retry.Permanent(fmt.Errorf("%w: the resource reconciles %T, got %T", ErrWrongType, zero, obj))
}

// GetCurrentState returns the owner's children that the cache holds: label
// LabelManagedBy=ManagedBy and a controller owner reference to the owner.
func (o *ops[O, C]) GetCurrentState(_ context.Context, obj any) (any, error) {
	w, err := o.owner(obj)
	if err != nil {
		return nil, err
	}
	var cs childSet[C]
	uid := w.GetUID()
	if uid == "" {
		return cs.state(), nil
	}
	add := func(m metav1.Object) error {
		c, err := o.typed(m)
		if err == nil {
			cs.add(c)
		}
		return err
	}
	if o.owners != nil {
		if first, more, complete := o.owners.children(uid); complete {
			if first == nil {
				return cs.state(), nil
			}
			if err := add(first); err != nil {
				return nil, err
			}
			for _, m := range more {
				if err := add(m); err != nil {
					return nil, err
				}
			}
			return cs.state(), nil
		}
	}
	for _, x := range o.config.Cache.List() {
		if m, owner := childOwner(x, o.config.ManagedBy); owner == uid {
			if err := add(m); err != nil {
				return nil, err
			}
		}
	}
	return cs.state(), nil
}

// childSet collects the children of an owner for GetCurrentState: the
// first in one, all of them in all once there is a second.
type childSet[C Object] struct {
	n   int
	one C
	all *current[C]
}

func (s *childSet[C]) add(c C) {
	switch s.n {
	case 0:
		s.one = c
	case 1:
		s.all = &current[C]{owned: []C{s.one, c}}
	default:
		s.all.owned = append(s.all.owned, c)
	}
	s.n++
}

// state returns the current state of the children added: the one child
// itself, a C, or a *current[C] for none or several (see states).
func (s *childSet[C]) state() any {
	switch s.n {
	case 0:
		return &current[C]{}
	case 1:
		return s.one
	}
	return s.all
}

// typed returns a cached object as a C.
func (o *ops[O, C]) typed(x any) (C, error) {
	if c, ok := x.(C); ok {
		return c, nil
	}
	var zero C
	u, ok := x.(*unstructured.Unstructured)
	if !ok {
		return zero, fmt.Errorf("the cache holds a %T, want %T or *unstructured.Unstructured", x, zero)
	}
	o.unstructuredCache.Store(true)
	c := reflect.New(o.childType).Interface().(C)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, c); err != nil {
		return zero, fmt.Errorf("convert cached %s %s/%s: %w", o.config.GVK.Kind, u.GetNamespace(), u.GetName(), err)
	}
	return c, nil
}

// lookup returns the cached child namespace/name (with the answers of the
// resource's own writes, when the cache records them), or a nil C.
func (o *ops[O, C]) lookup(namespace, name string) (C, error) {
	var zero C
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	x, ok, err := o.config.Cache.Get(key)
	if err != nil || !ok {
		return zero, err
	}
	return o.typed(x)
}

// GetDesiredState returns the children Desired or DesiredSet returns, with
// their namespace set, and checked (the label LabelManagedBy and the
// controller reference are added when a child is written: change); a nil
// state when the owner is being deleted (Desired is not called then, so an
// owner whose spec is invalid can still be deleted).
func (o *ops[O, C]) GetDesiredState(ctx context.Context, obj any) (any, error) {
	w, err := o.owner(obj)
	if err != nil {
		return nil, err
	}
	if w.GetDeletionTimestamp() != nil {
		return (*desired[C])(nil), nil
	}
	if o.config.Desired == nil {
		children, err := o.config.DesiredSet(ctx, w)
		if err != nil {
			return nil, err
		}
		if err := o.check(w, children); err != nil {
			return nil, err
		}
		return &desired[C]{children: children}, nil
	}
	c, err := o.config.Desired(ctx, w)
	if err != nil {
		return nil, err
	}
	if reflect.ValueOf(c).IsNil() {
		if err := o.check(w, nil); err != nil {
			return nil, err
		}
		return &desired[C]{}, nil // none: a child of the owner is deleted
	}
	if err := o.check(w, []C{c}); err != nil {
		return nil, err
	}
	return c, nil // one child: the state is the child itself (see states)
}

// check checks children, the desired children of owner w, and sets their
// namespace (prepare); it fails for an owner that no controller reference
// can name, also when children is empty.
func (o *ops[O, C]) check(w O, children []C) error {
	ref, err := o.ownerReference(w)
	if err != nil {
		return err
	}
	var names map[string]bool
	if len(children) > 1 {
		names = make(map[string]bool, len(children))
	}
	for i, c := range children {
		if reflect.ValueOf(c).IsNil() {
			return o.invalid(w, fmt.Sprintf("#%d", i), "is nil")
		}
		if err := o.prepare(w, c, ref); err != nil {
			return err
		}
		if names != nil {
			// By namespace and name: a cluster-scoped owner's children
			// of one name in two namespaces are two children.
			key := childName(c)
			if names[key] {
				return o.invalid(w, key, "is in the desired set twice")
			}
			names[key] = true
		}
	}
	return nil
}

// prepare checks the desired child c of owner w and sets its namespace;
// ref, the controller reference to w, replaces an owner reference of c to
// w.
func (o *ops[O, C]) prepare(w O, c C, ref metav1.OwnerReference) error {
	if c.GetName() == "" {
		return o.invalid(w, "(no name)", "has an empty name")
	}
	if o.clusterScoped.Load() && w.GetNamespace() != "" {
		return o.invalid(w, c.GetName(), clusterScopedProblem)
	}
	switch ns := c.GetNamespace(); {
	case ns == "" && w.GetNamespace() != "":
		c.SetNamespace(w.GetNamespace())
	case w.GetNamespace() != "" && ns != w.GetNamespace():
		return o.invalid(w, ns+"/"+c.GetName(), "is not in the owner's namespace "+w.GetNamespace())
	}
	if o.cacheNamespace != "" && c.GetNamespace() != o.cacheNamespace {
		return o.invalid(w, childName(c), fmt.Sprintf("is in namespace %q, but the resource's Cache holds namespace %s only: it would be applied in every reconciliation", c.GetNamespace(), o.cacheNamespace))
	}
	if gvk := c.GetObjectKind().GroupVersionKind(); !gvk.Empty() && gvk != o.config.GVK {
		return o.invalid(w, childName(c), fmt.Sprintf("is a %s, but the resource writes %s", gvk, o.config.GVK))
	}
	refs := c.GetOwnerReferences()
	namesOwner := false
	for _, r := range refs {
		switch {
		case r.UID == ref.UID:
			namesOwner = true
		case r.Controller != nil && *r.Controller:
			return o.invalid(w, childName(c), fmt.Sprintf("names another controller, %s %s", r.Kind, r.Name))
		}
	}
	if namesOwner {
		// Desired named the owner itself: the controller reference
		// replaces that entry (in a copy: Desired may share its slice).
		out := slices.DeleteFunc(slices.Clone(refs), func(r metav1.OwnerReference) bool { return r.UID == ref.UID })
		c.SetOwnerReferences(append(out, ref))
	}
	return nil
}

var yes = true

// clusterScopedProblem is the problem of a cluster-scoped child of a
// namespaced owner.
const clusterScopedProblem = "is cluster-scoped, and its owner is namespaced: Kubernetes' garbage collector never resolves such an owner reference (give it a cluster-scoped owner)"

// previousOwner reports whether the controller reference ctrl names an
// owner of the kind (group and kind) and name of ref, the controller
// reference to the owner, with another UID: an owner of that name deleted
// since (two objects of one kind and name do not exist at once).
func previousOwner(ctrl *metav1.OwnerReference, ref metav1.OwnerReference) bool {
	if ctrl.UID == ref.UID || ctrl.Kind != ref.Kind || ctrl.Name != ref.Name {
		return false
	}
	cg, err := schema.ParseGroupVersion(ctrl.APIVersion)
	if err != nil {
		return false
	}
	rg, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && cg.Group == rg.Group
}

// ownerKind returns the apiVersion and kind of the controller reference to
// w: Config.OwnerGVK's, else w's own; an empty apiVersion when there is
// no version.
func (o *ops[O, C]) ownerKind(w O) (apiVersion, kind string) {
	if gvk := o.config.OwnerGVK; !gvk.Empty() {
		return o.ownerAPIVersionOf(gvk.GroupVersion()), gvk.Kind // New checked its version
	}
	k := w.GetObjectKind()
	if tm, ok := k.(*metav1.TypeMeta); ok {
		// A typed owner: its apiVersion as the last one's is not parsed
		// again (what GroupVersionKind does).
		if last := o.ownerAPIVersion.Load(); last != nil && last.raw != "" && last.raw == tm.APIVersion {
			return last.s, tm.Kind
		}
		gvk := tm.GroupVersionKind()
		if gvk.Version == "" {
			return "", gvk.Kind
		}
		s := gvk.GroupVersion().String()
		o.ownerAPIVersion.Store(&apiVersionOf{gv: gvk.GroupVersion(), s: s, raw: tm.APIVersion})
		return s, gvk.Kind
	}
	gvk := k.GroupVersionKind()
	if gvk.Version == "" {
		return "", gvk.Kind
	}
	return o.ownerAPIVersionOf(gvk.GroupVersion()), gvk.Kind
}

// ownerReference returns the controller reference to w.
func (o *ops[O, C]) ownerReference(w O) (metav1.OwnerReference, error) {
	apiVersion, kind := o.ownerKind(w)
	if kind == "" || apiVersion == "" {
		return metav1.OwnerReference{}, retry.Permanent(fmt.Errorf("%w: owner %s has no apiVersion and kind: set Config.OwnerGVK", ErrInvalidChild, ownerName(w)))
	}
	if w.GetUID() == "" {
		return metav1.OwnerReference{}, retry.Permanent(fmt.Errorf("%w: owner %s has no uid", ErrInvalidChild, ownerName(w)))
	}
	return metav1.OwnerReference{
		APIVersion: apiVersion, Kind: kind, Name: w.GetName(), UID: w.GetUID(),
		Controller: &yes, BlockOwnerDeletion: &yes,
	}, nil
}

// invalid returns the permanent error about the desired child named child
// of owner w.
func (o *ops[O, C]) invalid(w O, child, problem string) error {
	return retry.Permanent(fmt.Errorf("%w: %s %s of %s %s", ErrInvalidChild, strings.ToLower(o.config.GVK.Kind), child, kindOf(w), ownerName(w)+" "+problem))
}

// NewUpdatePatch applies (create part) desired children the cache does not
// hold, applies (update part) those whose owned fields differ, and deletes
// (delete part) the owner's children that the desired state does not name.
// When nothing is written and Readiness (or ReadyWhen) finds a child not
// ready, it stops the chain as waiting.
func (o *ops[O, C]) NewUpdatePatch(ctx context.Context, obj, currentState, desiredState any) (*crud.Patch, error) {
	w, err := o.owner(obj)
	if err != nil {
		return nil, err
	}
	var one [2]C // backs owned and children when a state is one child
	owned, children, ok, err := o.states(currentState, desiredState, &one)
	if err != nil || !ok {
		return nil, err
	}
	// The controller reference again rather than kept in the desired
	// state: building it allocates nothing, and keeping it would add 80
	// bytes to every reconciliation's desired state.
	var ref metav1.OwnerReference
	if len(children) > 0 {
		if ref, err = o.ownerReference(w); err != nil {
			return nil, err
		}
	}
	var creates, updates, deletes Changes
	var waits []string
	for _, d := range children {
		c, err := o.lookup(d.GetNamespace(), d.GetName())
		if err != nil {
			return nil, err
		}
		var ctrl *metav1.OwnerReference // c's controller, when c exists
		if !reflect.ValueOf(c).IsNil() {
			if ctrl = metav1.GetControllerOfNoCopy(c); ctrl != nil && ctrl.UID != w.GetUID() {
				if c.GetDeletionTimestamp() != nil {
					// Deleted, and finalizers hold it (a Namespace
					// Terminating) for as long as they like: a wait as
					// for one's own child being deleted, not an error
					// retried with backoff, nor bad input (its name is
					// free once they let it go). The delete event of a
					// previous owner's child wakes the owner of its
					// name; that of another controller's wakes that
					// controller: the requeue after WaitDelay does.
					waits = append(waits, notReadyMessage(o.config.GVK.Kind, c, deletedReason(c, ctrl, ref)))
					continue
				}
				if previousOwner(ctrl, ref) {
					// The child of a deleted owner of this name, whose
					// delete (by its delete chain, which wakes no owner,
					// or by the garbage collector) the cache has not
					// shown yet: not bad input, and gone soon.
					return nil, fmt.Errorf("%s %s of %s %s is still the child of the previous %s of that name (uid %s), deleted since: waiting for it to go", strings.ToLower(o.config.GVK.Kind), childName(d), kindOf(w), ownerName(w), ctrl.Kind, ctrl.UID)
				}
				return nil, o.invalid(w, childName(d), fmt.Sprintf("exists and is controlled by %s %s (uid %s)", ctrl.Kind, ctrl.Name, ctrl.UID))
			}
			if c.GetDeletionTimestamp() != nil {
				// Being deleted (finalizers hold it): not in place, and
				// nothing written to it would stay. Its delete event
				// wakes the owner, which creates it again.
				waits = append(waits, notReadyMessage(o.config.GVK.Kind, c, beingDeleted(c)))
				continue
			}
		}
		change, err := o.change(c, ctrl, d, ref, w.GetLabels())
		if err != nil {
			if ns, ok := err.(notSelectedError); ok {
				return nil, o.notSelected(w, childName(d), ns)
			}
			return nil, o.encodeError(w, d, err)
		}
		switch {
		case change == nil:
			if r := o.notReady(c); r != "" {
				waits = append(waits, r)
			}
		case change.Action == ActionCreate:
			creates = append(creates, change)
		default:
			updates = append(updates, change)
		}
	}
	for _, c := range owned {
		// One that is terminating (finalizers hold its delete) is not
		// deleted again: its delete event wakes the owner when it goes.
		if !namedIn(children, c.GetNamespace(), c.GetName()) && !o.terminating(c) {
			deletes = append(deletes, o.deleteChange(c))
		}
	}
	if len(creates)+len(updates)+len(deletes) == 0 {
		if len(waits) > 0 {
			o.wait(ctx, waits)
		}
		return nil, nil // nothing to apply (crud: a nil patch applies nothing)
	}
	// The last part applied signals the wait, for the children
	// written that are not ready (or that the answer shows being
	// deleted: an object of another's that finalizers hold, adopted)
	// and those found not ready (or being deleted) here.
	ws := &waitState{reasons: waits, delay: o.config.WaitDelay}
	parts := []Changes{creates, updates, deletes}
	for _, p := range parts {
		for _, c := range p {
			c.wait = ws
		}
	}
	for i := len(parts) - 1; i >= 0; i-- {
		if len(parts[i]) > 0 {
			parts[i][len(parts[i])-1].last = true
			break
		}
	}
	patch := crud.NewPatch()
	if len(creates) > 0 {
		patch.SetCreateChange(creates)
	}
	if len(updates) > 0 {
		patch.SetUpdateChange(updates)
	}
	if len(deletes) > 0 {
		patch.SetDeleteChange(deletes)
	}
	return patch, nil
}

// terminating reports whether the owned child c, about to be deleted, is
// being deleted already (finalizers hold it): its delete event wakes the
// owner when it goes, so it is not deleted again. The owner index shows a
// change of c a moment after the cache does, so the cache's object of c's
// name and UID is asked too (only for children to delete: no cost to a
// no-op).
func (o *ops[O, C]) terminating(c C) bool {
	if c.GetDeletionTimestamp() != nil {
		return true
	}
	x, err := o.lookup(c.GetNamespace(), c.GetName())
	if err != nil || reflect.ValueOf(x).IsNil() {
		return false
	}
	return x.GetUID() == c.GetUID() && x.GetDeletionTimestamp() != nil
}

// NewDeletePatch deletes every child of the owner that the cache holds, but
// those terminating already.
func (o *ops[O, C]) NewDeletePatch(_ context.Context, _, currentState, _ any) (*crud.Patch, error) {
	var one [2]C
	owned, _, _, err := o.states(currentState, nil, &one)
	if err != nil {
		return nil, err
	}
	patch := crud.NewPatch()
	var deletes Changes
	for _, c := range owned {
		if !o.terminating(c) {
			deletes = append(deletes, o.deleteChange(c))
		}
	}
	if len(deletes) > 0 {
		patch.SetDeleteChange(deletes)
	}
	return patch, nil
}

// states returns the children of the current state (GetCurrentState's),
// those of the desired state (GetDesiredState's), and whether there is a
// desired state: false for a nil desiredState, and while the owner is being
// deleted. A state that is one child, a C, is returned in a slice backed by
// one (owned by one[0], children by one[1]), which the caller keeps on its
// stack.
func (o *ops[O, C]) states(currentState, desiredState any, one *[2]C) (owned, children []C, ok bool, err error) {
	if c, isOne := currentState.(C); isOne && !reflect.ValueOf(c).IsNil() {
		one[0] = c
		owned = one[:1:1]
	} else if cur, isCur := currentState.(*current[C]); isCur && cur != nil {
		owned = cur.owned
	} else {
		return nil, nil, false, fmt.Errorf("current state is %T, want %T or %T", currentState, cur, c)
	}
	if desiredState == nil {
		return owned, nil, false, nil
	}
	if c, isOne := desiredState.(C); isOne && !reflect.ValueOf(c).IsNil() {
		one[1] = c
		return owned, one[1:2:2], true, nil
	}
	des, isDes := desiredState.(*desired[C])
	if !isDes {
		return nil, nil, false, fmt.Errorf("desired state is %T, want %T or %T", desiredState, des, one[1])
	}
	if des == nil {
		return owned, nil, false, nil
	}
	return owned, des.children, true, nil
}

// namedIn reports whether children names the child namespace/name (a
// cluster-scoped owner's children may be in several namespaces).
func namedIn[C Object](children []C, namespace, name string) bool {
	for _, c := range children {
		if c.GetName() == name && c.GetNamespace() == namespace {
			return true
		}
	}
	return false
}

// change returns the create or update of d given the current child c (nil
// when there is none) and its controller reference ctrl, or nil when c
// needs no write; ref is the controller reference to the owner.
//
// d carries neither the label LabelManagedBy nor ref until it is written
// (or given to Matches), so that a child that needs no write costs no copy
// of its labels and owner references: the comparison checks them on c
// instead, and adds them to d first when c lacks them, so that the walk
// names the difference.
func (o *ops[O, C]) change(c C, ctrl *metav1.OwnerReference, d C, ref metav1.OwnerReference, wl map[string]string) (*Change, error) {
	exists := !reflect.ValueOf(c).IsNil()
	var cv reflect.Value
	if exists {
		cv = reflect.ValueOf(c).Elem()
	}
	if !exists || o.config.Matches != nil || o.setsOwnLabels(d) || !o.ownedBy(c, ctrl, ref, wl) {
		o.own(d, ref, wl)
	}
	if exists && o.config.Matches != nil && o.config.Matches(c, d) {
		// Its content needs no write, but what the resource owns of its
		// metadata may (an owner label whose value changed): that alone.
		return o.relabelChange(c, ctrl, d, ref)
	}
	compared := d
	if exists && o.secret {
		compared = asStored(d)
	}
	fields, more, emptyAbsent := diffChild(reflect.ValueOf(compared).Elem(), cv, false, &o.dropped)
	if exists && o.config.Matches == nil && len(fields) == 0 {
		return nil, nil
	}
	if o.secret {
		hideSecretValues(fields)
	}
	o.own(d, ref, wl)
	if o.selector != nil && !o.selector.Matches(labels.Set(d.GetLabels())) {
		return nil, notSelectedError{d.GetLabels()}
	}
	body, err := json.Marshal(objectPayload(reflect.ValueOf(d).Elem(), o.apiVersion, o.config.GVK.Kind))
	if err != nil {
		return nil, err
	}
	change := &Change{Action: ActionUpdate, Kind: o.config.GVK.Kind, Namespace: d.GetNamespace(), Name: d.GetName(), Fields: fields, More: more, body: body}
	if !exists {
		change.Action = ActionCreate
		if o.config.Matches != nil && len(o.config.OwnerLabels) > 0 {
			// The Cache selects the owner labels' values: it does not
			// hold a child of this owner's whose values changed (the
			// owner moved to another shard).
			change.readFirst = d
		}
	} else {
		change.UID = c.GetUID()
	}
	if emptyAbsent {
		change.learnFrom = d
	}
	return change, nil
}

// relabelChange returns the update of the cached child c (whose controller
// reference is ctrl, nil or the owner's), that Matches found matching the
// desired child d, of what the resource owns of its metadata and that
// differs from d's: the label LabelManagedBy, the owner labels
// (OwnerLabels: set to d's values, and removed, with null, where d has none
// and c has one: staleOwnerLabels) and the controller reference ref. It is
// nil when none differs. Its body is a JSON merge patch of those labels
// and, when the controller reference differs, of the owner references
// (c's, with ref in place of any of the owner's), conditional on c's
// resourceVersion: an apply of metadata alone under Config.FieldManager
// would remove the fields of the content that the manager applied before
// (and that an immutable field cannot lose), and a merge patch computed
// from a child changed since fails with a conflict instead of undoing that
// change. The error is a notSelectedError when the Cache's selector would
// not select c's labels once relabelled.
func (o *ops[O, C]) relabelChange(c C, ctrl *metav1.OwnerReference, d C, ref metav1.OwnerReference) (*Change, error) {
	dl, cl := d.GetLabels(), c.GetLabels()
	stale := o.staleOwnerLabels(cl, dl)
	if len(stale) == 0 && o.ownedBy(c, ctrl, ref, dl) {
		return nil, nil
	}
	set := make(map[string]string, 1+len(o.config.OwnerLabels))
	for _, k := range append([]string{LabelManagedBy}, o.config.OwnerLabels...) {
		if v, ok := dl[k]; ok {
			if cv, has := cl[k]; !has || cv != v { // "" is a value
				set[k] = v
			}
		}
	}
	var desired, current metav1.PartialObjectMetadata
	current.ObjectMeta = metav1.ObjectMeta{Labels: cl, OwnerReferences: c.GetOwnerReferences()}
	desired.Labels = set
	type metadata struct {
		ResourceVersion string                  `json:"resourceVersion"`
		Labels          map[string]*string      `json:"labels,omitempty"`
		OwnerReferences []metav1.OwnerReference `json:"ownerReferences,omitempty"`
	}
	patch := metadata{ResourceVersion: c.GetResourceVersion()}
	if len(set)+len(stale) > 0 {
		// null removes a key (RFC 7386).
		patch.Labels = make(map[string]*string, len(set)+len(stale))
		for k, v := range set {
			patch.Labels[k] = &v
		}
		for _, k := range stale {
			patch.Labels[k] = nil
		}
	}
	if ctrl == nil || !ownerReferenceEqual(*ctrl, ref) {
		desired.OwnerReferences = []metav1.OwnerReference{ref}
		patch.OwnerReferences = append(slices.DeleteFunc(slices.Clone(c.GetOwnerReferences()),
			func(r metav1.OwnerReference) bool { return r.UID == ref.UID }), ref)
	}
	fields, more := diffObject(reflect.ValueOf(desired), reflect.ValueOf(current), false)
	for _, k := range stale {
		fields = append(fields, Field{Path: "metadata.labels[" + k + "]", From: show(reflect.ValueOf(cl[k])), To: "(none)"})
	}
	if len(fields) == 0 {
		return nil, nil
	}
	if len(stale) > 0 {
		sortFields(fields)
	}
	if o.selector != nil && len(set)+len(stale) > 0 {
		// A label set to a value the Cache does not select, or a key
		// it requires removed, would move the child out of it: refused
		// as a desired child it would not hold.
		after := maps.Clone(cl)
		maps.Copy(after, set)
		for _, k := range stale {
			delete(after, k)
		}
		if !o.selector.Matches(labels.Set(after)) {
			return nil, notSelectedError{after}
		}
	}
	body, err := json.Marshal(map[string]any{"metadata": patch})
	if err != nil {
		return nil, err
	}
	return &Change{Action: ActionUpdate, Kind: o.config.GVK.Kind, Namespace: c.GetNamespace(), Name: c.GetName(), UID: c.GetUID(),
		Fields: fields, More: more, body: body, relabel: true}, nil
}

// staleOwnerLabels returns the keys of OwnerLabels that the current
// child's labels cl carry and the desired child's labels dl (with what own
// gives) do not: the owner lost the label, and Desired sets none. A
// relabel removes them, as an apply removes a label its manager stops
// applying.
func (o *ops[O, C]) staleOwnerLabels(cl, dl map[string]string) []string {
	var stale []string
	for _, k := range o.config.OwnerLabels {
		if _, has := cl[k]; has {
			if _, want := dl[k]; !want {
				stale = append(stale, k)
			}
		}
	}
	return stale
}

// ownerReferenceEqual reports whether the controller reference r is ref,
// as ownedBy compares them.
func ownerReferenceEqual(r, ref metav1.OwnerReference) bool {
	return r.UID == ref.UID && r.APIVersion == ref.APIVersion && r.Kind == ref.Kind && r.Name == ref.Name &&
		boolPtrMatches(ref.BlockOwnerDeletion, r.BlockOwnerDeletion)
}

// asStored returns the Secret d as the API server stores it, to compare
// with a current one: its stringData (write-only: the API server merges it
// into data, over data's values, and never returns it) moved into data,
// in a shallow copy with a new data map. Any other d is returned as it is.
func asStored[C Object](d C) C {
	s, ok := any(d).(*corev1.Secret)
	if !ok || len(s.StringData) == 0 {
		return d
	}
	stored := *s
	stored.Data = make(map[string][]byte, len(s.Data)+len(s.StringData))
	maps.Copy(stored.Data, s.Data)
	for k, v := range s.StringData {
		stored.Data[k] = []byte(v)
	}
	stored.StringData = nil
	return any(&stored).(C)
}

// hideSecretValues replaces the values of a Secret's data and stringData in
// fields, which plans, the debug endpoint and logs show, by "(hidden)".
func hideSecretValues(fields []Field) {
	for i := range fields {
		if p := fields[i].Path; strings.HasPrefix(p, "data") || strings.HasPrefix(p, "stringData") {
			if fields[i].From != "(none)" {
				fields[i].From = "(hidden)"
			}
			if fields[i].To != "(none)" {
				fields[i].To = "(hidden)"
			}
		}
	}
}

// setsOwnLabels reports whether d sets a label that own sets: then the
// comparison must see own's value, not d's.
func (o *ops[O, C]) setsOwnLabels(d C) bool {
	l := d.GetLabels()
	if _, ok := l[LabelManagedBy]; ok {
		return true
	}
	for _, k := range o.config.OwnerLabels {
		if _, ok := l[k]; ok {
			return true
		}
	}
	return false
}

// notSelectedError is the error of change and relabelChange for a child
// whose labels, once written, the Cache's selector would not select.
type notSelectedError struct{ labels map[string]string }

func (e notSelectedError) Error() string {
	return fmt.Sprintf("labels %v not selected by the cache", e.labels)
}

// notSelected returns the permanent error of the desired child named child
// of owner w that the Cache's selector would not select once written (ns).
func (o *ops[O, C]) notSelected(w O, child string, ns notSelectedError) error {
	return o.invalid(w, child, fmt.Sprintf("would carry the labels %v, which the Cache's selector %q does not select: it would be applied in every reconciliation (set the labels the selector requires in Desired, or copy them from the owner with OwnerLabels)", ns.labels, o.selector))
}

// own gives d the label LabelManagedBy=ManagedBy and the values of the
// owner's labels wl that OwnerLabels names, in a copy of its labels (the
// caller's Desired may share its map), and ref, after its other owner
// references (in a new array), unless it has them.
func (o *ops[O, C]) own(d C, ref metav1.OwnerReference, wl map[string]string) {
	if l := d.GetLabels(); !o.labelled(l, wl) {
		l = maps.Clone(l)
		if l == nil {
			l = make(map[string]string, 1+len(o.config.OwnerLabels))
		}
		l[LabelManagedBy] = o.config.ManagedBy
		for _, k := range o.config.OwnerLabels {
			if v, ok := wl[k]; ok {
				l[k] = v
			}
		}
		d.SetLabels(l)
	}
	refs := d.GetOwnerReferences()
	if !slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == ref.UID }) {
		d.SetOwnerReferences(append(slices.Clip(refs), ref))
	}
}

// labelled reports whether labels l carry what own gives: LabelManagedBy
// and the values of the owner's labels wl that OwnerLabels names.
func (o *ops[O, C]) labelled(l, wl map[string]string) bool {
	if v, ok := l[LabelManagedBy]; !ok || v != o.config.ManagedBy {
		return false
	}
	for _, k := range o.config.OwnerLabels {
		if v, ok := wl[k]; ok {
			if cv, has := l[k]; !has || cv != v {
				return false
			}
		}
	}
	return true
}

// ownedBy reports whether the cached child c, whose controller reference
// is r, carries what own gives a desired one: the labels (labelled) and a
// controller reference equal to ref.
func (o *ops[O, C]) ownedBy(c C, r *metav1.OwnerReference, ref metav1.OwnerReference, wl map[string]string) bool {
	if !o.labelled(c.GetLabels(), wl) {
		return false
	}
	return r != nil && ownerReferenceEqual(*r, ref)
}

func (o *ops[O, C]) deleteChange(c C) *Change {
	return &Change{Action: ActionDelete, Kind: o.config.GVK.Kind, Namespace: c.GetNamespace(), Name: c.GetName(), UID: c.GetUID()}
}

func (o *ops[O, C]) encodeError(w O, d C, err error) error {
	return retry.Permanent(fmt.Errorf("%w: encode %s %s of %s %s: %w", ErrInvalidChild, strings.ToLower(o.config.GVK.Kind), childName(d), kindOf(w), ownerName(w), err))
}

// ApplyCreateChange applies each child of the create part.
func (o *ops[O, C]) ApplyCreateChange(ctx context.Context, obj, change any) error {
	return o.applyAll(ctx, obj, change)
}

// ApplyUpdateChange applies each child of the update part.
func (o *ops[O, C]) ApplyUpdateChange(ctx context.Context, obj, change any) error {
	return o.applyAll(ctx, obj, change)
}

func (o *ops[O, C]) applyAll(ctx context.Context, obj, change any) error {
	cs, ok := change.(Changes)
	if !ok {
		return fmt.Errorf("change is %T, want child.Changes", change)
	}
	for _, c := range cs {
		answer, err := o.apply(ctx, c)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			// Nothing can be created in a Namespace being deleted, which
			// the owner's reconciliation may not know yet (the owner's
			// deletion, or the Namespace's, not in the cache yet):
			// waited for, as a child being deleted, not an error. The
			// children after this one are not written: those in this
			// namespace would be refused too, and those of a
			// cluster-scoped owner in other namespaces wait with them
			// until the namespace is gone (or no longer desired).
			reasons := []string{fmt.Sprintf("%s %s/%s not created: namespace %s is being deleted", strings.ToLower(c.Kind), c.Namespace, c.Name, c.Namespace)}
			if c.wait != nil {
				reasons = append(c.wait.reasons, reasons...)
			}
			o.wait(ctx, reasons)
			return nil
		}
		if ns, ok := err.(notSelectedError); ok {
			// The relabel of a child read before its create: refused
			// as in NewUpdatePatch, not written.
			w, err := o.owner(obj)
			if err != nil {
				return err
			}
			return o.notSelected(w, childName(c.readFirst), ns)
		}
		if err != nil {
			return o.writeError(obj, c, err)
		}
		if c.Namespace != "" && !reflect.ValueOf(answer).IsNil() && answer.GetNamespace() == "" {
			// Written, but found in every reconciliation under another
			// key than its name and namespace: applied again, and
			// deleted as not desired.
			o.clusterScoped.Store(true)
			w, err := o.owner(obj)
			if err != nil {
				return err
			}
			return o.invalid(w, c.Name, clusterScopedProblem)
		}
		if c.wait != nil {
			if r := o.notReadyAnswer(answer, c); r != "" {
				c.wait.reasons = append(c.wait.reasons, r)
			}
		}
		o.finish(ctx, c)
	}
	return nil
}

// finish signals the wait after the last change of a patch.
func (o *ops[O, C]) finish(ctx context.Context, c *Change) {
	if c.last && c.wait != nil && len(c.wait.reasons) > 0 {
		o.wait(ctx, c.wait.reasons)
	}
}

func (o *ops[O, C]) apply(ctx context.Context, c *Change) (C, error) {
	if c.readFirst != nil {
		current, rc, err := o.readFirst(ctx, c)
		switch {
		case err != nil:
			return current, err
		case rc != nil:
			c = rc // a relabel
		case !reflect.ValueOf(current).IsNil():
			return current, nil // in place already, or being deleted: no write
		}
	}
	answer, err := o.sendApply(ctx, c)
	if c.relabel && apierrors.IsNotFound(err) {
		// A merge patch needs the child: deleted since it was read (its
		// delete event wakes the owner, which creates it again), not a
		// kind the API server does not serve (writeError).
		return answer, goneError{err}
	}
	if err != nil {
		return answer, err
	}
	if !reflect.ValueOf(answer).IsNil() {
		if c.learnFrom != nil && !c.relabel {
			learn(&o.dropped, reflect.ValueOf(c.learnFrom).Elem(), reflect.ValueOf(answer).Elem())
		}
		o.known(answer)
		level.Debug(o.logger).Log("msg", "applied child", "action", c.Action, "kind", c.Kind, "child", c.Namespace+"/"+c.Name, "resourceVersion", answer.GetResourceVersion())
	}
	return answer, nil
}

// known records the child answer, as the API server answered a write of it
// or a read, in the Cache's mutation cache and the owner index.
func (o *ops[O, C]) known(answer C) {
	o.record(answer)
	if o.owners != nil {
		// At once, not when the informer's handler sees it: a delete
		// chain that runs an instant after this create must find the
		// child.
		o.owners.answer(answer)
	}
}

// getter is the Get of a typed client (Config.Client's, through Typed).
type getter[C any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (C, error)
}

// readFirst reads the child of the create c, whose desired child (labels
// and controller reference added) is c.readFirst, from the API server:
// the Cache, which selects the owner labels' values, does not hold a child
// of this owner whose values changed since it was written (its owner moved
// to another shard). One that exists, that no other controller has, and
// that Matches finds matching is not applied (its content may have
// immutable fields that the desired one has otherwise): it returns the
// relabel of its metadata (relabelChange), or, when none is needed or it
// is being deleted, the child itself to take as the answer of a write
// (known as one when none is needed, not when it is being deleted). It
// returns neither when the child is to be applied: it does not exist,
// Matches finds it differing, another controller has it (the apply's
// answer says so; but one being deleted is returned, to wait for, and
// the child of a previous owner of the owner's kind and name is an error
// retried, as for a child the Cache holds), Config.Client has no Get
// method, or the GET is forbidden (a role without get).
func (o *ops[O, C]) readFirst(ctx context.Context, c *Change) (current C, relabel *Change, err error) {
	var zero C
	g, ok := o.config.Client(c.Namespace).(getter[C])
	d, isC := c.readFirst.(C)
	if !ok || !isC {
		return zero, nil, nil
	}
	cur, err := g.Get(ctx, c.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return zero, nil, nil
	case apierrors.IsForbidden(err):
		// A role that grants what the resource needed before it read a
		// child first (list, watch, patch, delete), not get: applied as
		// then, rather than failing every create.
		level.Debug(o.logger).Log("msg", "child not in the cache not read (get forbidden): applied", "kind", c.Kind, "child", c.Namespace+"/"+c.Name, "err", err)
		return zero, nil, nil
	case err != nil:
		return zero, nil, err
	case reflect.ValueOf(cur).IsNil():
		return zero, nil, nil
	}
	ref := metav1.GetControllerOfNoCopy(d)
	ctrl := metav1.GetControllerOfNoCopy(cur)
	if ref == nil {
		return zero, nil, nil
	}
	if cur.GetDeletionTimestamp() != nil {
		// Waited for, as a child being deleted (also another
		// controller's: as NewUpdatePatch does for one the Cache
		// holds); not known (perhaps labelled for another shard, the
		// Cache may never show its delete).
		return cur, nil, nil
	}
	if ctrl != nil && ctrl.UID != ref.UID {
		// Another controller's: applied, as NewUpdatePatch does for one
		// the Cache holds, it is refused as invalid (an object has one
		// controller); but a previous owner's goes soon.
		if previousOwner(ctrl, *ref) {
			return zero, nil, fmt.Errorf("still the child of the previous %s of that name (uid %s), deleted since: waiting for it to go", ctrl.Kind, ctrl.UID)
		}
		return zero, nil, nil
	}
	if !o.config.Matches(cur, d) {
		return zero, nil, nil
	}
	rc, err := o.relabelChange(cur, ctrl, d, *ref)
	if err != nil {
		return cur, nil, err
	}
	if rc == nil {
		// In place already: known as a write's answer is, so that a
		// delete chain that runs before the Cache shows it finds it.
		o.known(cur)
		return cur, nil, nil
	}
	level.Debug(o.logger).Log("msg", "child not in the cache matches: relabelled, not applied", "kind", c.Kind, "child", c.Namespace+"/"+c.Name)
	return zero, rc, nil
}

// goneError is the NotFound of a relabel: the child was deleted since it
// was read; an error that is retried.
type goneError struct{ err error }

func (e goneError) Error() string { return "gone before its relabel: " + e.err.Error() }
func (e goneError) Unwrap() error { return e.err }

// errPanicked is what Writes is told of a write whose client panicked.
var errPanicked = errors.New("the write panicked")

// sendApply sends the apply of c, told to Writes: Begin's func gets the
// answer, or errPanicked when Patch panics (the panic goes on), since a
// Begin without its func would hold the child's watch events for ever.
func (o *ops[O, C]) sendApply(ctx context.Context, c *Change) (answer C, err error) {
	force := true
	pt, opts := types.ApplyPatchType, metav1.PatchOptions{FieldManager: o.config.FieldManager, Force: &force}
	if c.relabel {
		pt, opts.Force = types.MergePatchType, nil // force is for applies only
	}
	client := o.config.Client(c.Namespace)
	if o.config.Writes == nil {
		return client.Patch(ctx, c.Name, pt, c.body, opts)
	}
	done := o.config.Writes.Begin(o.config.Resource, c.Namespace, c.Name)
	err = errPanicked // unless Patch returns
	defer func() {
		var m metav1.Object
		if err == nil && !reflect.ValueOf(answer).IsNil() {
			m = answer
		}
		done(m, err)
	}()
	return client.Patch(ctx, c.Name, pt, c.body, opts)
}

// sendDelete sends the delete of c with opts, told to Writes when it is a
// DeleteWrites: BeginDelete's func gets the error, or errPanicked when
// Delete panics (the panic goes on).
func (o *ops[O, C]) sendDelete(ctx context.Context, c *Change, opts metav1.DeleteOptions) (err error) {
	dw, ok := o.config.Writes.(DeleteWrites)
	if !ok {
		return o.config.Client(c.Namespace).Delete(ctx, c.Name, opts)
	}
	done := dw.BeginDelete(c.UID)
	err = errPanicked // unless Delete returns
	defer func() { done(err) }()
	return o.config.Client(c.Namespace).Delete(ctx, c.Name, opts)
}

// record gives the answer of a write to the cache's mutation cache, in the
// form the cache holds.
func (o *ops[O, C]) record(answer C) {
	if o.mutation == nil {
		return
	}
	if !o.unstructuredCache.Load() {
		o.mutation.Mutation(answer)
		return
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(answer)
	if err != nil {
		return
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(o.config.GVK)
	o.mutation.Mutation(u)
}

// ApplyDeleteChange deletes each child of the delete part, with its UID as
// precondition. A child that is gone, or was replaced by another object of
// the same name (the precondition fails), counts as deleted.
func (o *ops[O, C]) ApplyDeleteChange(ctx context.Context, obj, change any) error {
	cs, ok := change.(Changes)
	if !ok {
		return fmt.Errorf("change is %T, want child.Changes", change)
	}
	for _, c := range cs {
		opts := metav1.DeleteOptions{PropagationPolicy: &o.config.DeletePropagation}
		if c.UID != "" {
			uid := c.UID
			opts.Preconditions = &metav1.Preconditions{UID: &uid}
		}
		err := o.sendDelete(ctx, c, opts)
		switch {
		case err == nil:
			level.Debug(o.logger).Log("msg", "deleted child", "kind", c.Kind, "child", c.Namespace+"/"+c.Name)
		case apierrors.IsNotFound(err):
			if o.owners != nil {
				// Gone without the informer's delete event (the index
				// held this resource's own answer, and the informer
				// never saw the child): not a child any more.
				if m, ok := obj.(metav1.Object); ok {
					o.owners.drop(m.GetUID(), c.Namespace, c.Name)
				}
			}
		case apierrors.IsConflict(err) && c.UID != "":
			level.Debug(o.logger).Log("msg", "child replaced before its delete; not deleted", "kind", c.Kind, "child", c.Namespace+"/"+c.Name)
		default:
			return o.writeError(obj, c, err)
		}
		o.finish(ctx, c)
	}
	return nil
}

// writeError wraps the error of a write of c; errors that retrying cannot
// fix (the API server does not serve the kind, or rejects the object as
// invalid) are permanent, but the NotFound of a relabel (goneError): the
// child was deleted since it was read.
func (o *ops[O, C]) writeError(obj any, c *Change, err error) error {
	owner, clusterScopedOwner := "owner", false
	if m, ok := obj.(metav1.Object); ok {
		owner, clusterScopedOwner = ownerName(m), m.GetNamespace() == ""
	}
	what := fmt.Sprintf("%s %s %s/%s of %s %s", c.Action, strings.ToLower(c.Kind), c.Namespace, c.Name, kindOf(obj), owner)
	if errors.As(err, new(goneError)) {
		return fmt.Errorf("%s: %w", what, err)
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		s := status.Status()
		switch {
		case s.Code == http.StatusNotFound && (s.Details == nil || s.Details.Kind != "namespaces"),
			s.Code == http.StatusMethodNotAllowed:
			hint := ""
			if c.Namespace == "" && clusterScopedOwner {
				// Applied at the cluster scope: a namespaced kind is
				// not served there.
				hint = " (when it is namespaced, Desired must set the namespace: a cluster-scoped owner gives its children none)"
			}
			return retry.Permanent(fmt.Errorf("%w: %s: the API server does not write %s here%s: %w", ErrInvalidChild, what, o.config.GVK, hint, err))
		case s.Code == http.StatusUnprocessableEntity, s.Code == http.StatusBadRequest:
			return retry.Permanent(fmt.Errorf("%w: %s: %w", ErrInvalidChild, what, err))
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// notReadyAnswer returns why the child answer of the change c, just
// applied or read before its create (readFirst), is not in place: being
// deleted (an apply does not undo a delete), whatever Readiness says, or
// not ready (notReady); "" when it is.
func (o *ops[O, C]) notReadyAnswer(answer C, c *Change) string {
	if !reflect.ValueOf(answer).IsNil() && answer.GetDeletionTimestamp() != nil {
		reason := beingDeleted(answer)
		if c.readFirst != nil {
			// Read, not applied: perhaps another controller's.
			if ref := metav1.GetControllerOfNoCopy(c.readFirst); ref != nil {
				reason = deletedReason(answer, metav1.GetControllerOfNoCopy(answer), *ref)
			}
		}
		return notReadyMessage(o.config.GVK.Kind, answer, reason)
	}
	return o.notReady(answer)
}

// deletedReason returns why the child c, being deleted, whose controller
// reference is ctrl (nil when it has none), is waited for by the owner whose
// controller reference is ref: beingDeleted, and, when another controller
// than the owner or a previous owner of its kind and name has it, that
// controller, whose object holds the child's name until it goes.
func deletedReason(c metav1.Object, ctrl *metav1.OwnerReference, ref metav1.OwnerReference) string {
	if ctrl == nil || ctrl.UID == ref.UID || previousOwner(ctrl, ref) {
		return beingDeleted(c)
	}
	return fmt.Sprintf("%s, controlled by %s %s (uid %s)", beingDeleted(c), ctrl.Kind, ctrl.Name, ctrl.UID)
}

// waitState collects what the resource waits for across the parts of one
// patch; delay is Config.WaitDelay.
type waitState struct {
	reasons []string
	delay   time.Duration
}

// waitMessage returns the Reconciling message of the wait for reasons.
func waitMessage(reasons []string) string {
	return conditions.Fit(strings.Join(reasons, "; "), conditions.MaxMessage)
}

// waits reports whether the resource checks its children's readiness
// (Readiness or ReadyWhen is set).
func (o *ops[O, C]) waits() bool { return o.config.Readiness != nil || o.config.ReadyWhen != nil }

// notReady returns why c is not ready, "<kind> <namespace/name> not
// ready[: <reason>]", or "" when it is (or neither Readiness nor ReadyWhen
// is set, or c is nil). A panic in the author's check goes on, as one in
// Desired does: the Framework recovers it.
func (o *ops[O, C]) notReady(c C) string {
	if !o.waits() || reflect.ValueOf(c).IsNil() {
		return ""
	}
	var ready bool
	var why string
	if o.config.Readiness != nil {
		ready, why = o.config.Readiness(c)
	} else if ready = o.config.ReadyWhen(c); !ready {
		// The kstatus reason, when those rules find it not ready too.
		if ok, reason := ReadinessOf(c); !ok {
			why = reason
		}
	}
	if ready {
		return ""
	}
	return notReadyMessage(o.config.GVK.Kind, c, why)
}

// notReadyMessage returns "<kind> <namespace/name> not ready[: <reason>]",
// the reason made one line (reasonLine).
func notReadyMessage(kind string, c metav1.Object, reason string) string {
	msg := strings.ToLower(kind) + " " + childName(c) + " not ready"
	if reason = reasonLine(reason); reason != "" {
		msg += ": " + reason
	}
	return msg
}

// maxReason is the longest reason of a child not ready that the Reconciling
// message holds, in bytes: a long one cannot hide the others (a condition
// message holds 32 KiB).
const maxReason = 1024

// reasonLine returns reason as one line of the Reconciling message: each
// run of white space (newlines, tabs) as one space and none at either end,
// other control characters escaped as in a Go string literal ("\x1b", so
// that kubectl describe and the plan's text print no terminal control),
// invalid UTF-8 as U+FFFD, and at most maxReason bytes, cut at a character
// boundary with "...". A reason that is such a line already is returned as
// it is.
func reasonLine(reason string) string {
	if isLine(reason) {
		return reason
	}
	line := strings.Join(strings.FieldsFunc(strings.ToValidUTF8(reason, "\uFFFD"), unicode.IsSpace), " ")
	return conditions.Fit(printable.Escape(line), maxReason)
}

// isLine reports whether s is what reasonLine returns for it: at most
// maxReason bytes of valid UTF-8, without control characters, white space
// other than single ASCII spaces, or a space at either end.
func isLine(s string) bool {
	if len(s) > maxReason || !utf8.ValidString(s) {
		return false
	}
	space := true // no space first
	for _, r := range s {
		switch {
		case r == ' ' && space:
			return false
		case r == ' ':
			space = true
		case unicode.IsSpace(r), unicode.IsControl(r):
			return false
		default:
			space = false
		}
	}
	return s == "" || !space
}

// wait stops the chain as waiting for reasons: no error, a requeue after
// WaitDelay, the Reconciling condition, a trace step and a debug log. The
// message is cut to what a condition holds (conditions.MaxMessage): longer,
// the framework would refuse the condition as invalid, and fail the
// reconciliation instead of waiting.
func (o *ops[O, C]) wait(ctx context.Context, reasons []string) {
	msg := waitMessage(reasons)
	requeuecontext.SetRequeueAfter(ctx, o.config.WaitDelay)
	reconciliationcanceledcontext.SetCanceled(ctx)
	conditioncontext.Set(ctx, conditioncontext.Reconciling, metav1.ConditionTrue, ReasonWaitingForChild, msg)
	t := trace.FromContext(ctx)
	t.Record(o.config.Name, StepWait+": "+msg, t.Now(), trace.OutcomeCanceled, nil)
	level.Debug(o.logger).Log("msg", "waiting for child", "reason", msg, "requeueAfter", o.config.WaitDelay)
}

func childName(c metav1.Object) string {
	if c.GetNamespace() == "" {
		return c.GetName()
	}
	return c.GetNamespace() + "/" + c.GetName()
}

func ownerName(w metav1.Object) string { return childName(w) }

// kindOf returns the lower-case kind of obj, or its Go type.
func kindOf(obj any) string {
	if r, ok := obj.(runtime.Object); ok {
		if k := r.GetObjectKind().GroupVersionKind().Kind; k != "" {
			return strings.ToLower(k)
		}
	}
	t := reflect.TypeOf(obj)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "owner"
	}
	return strings.ToLower(t.Name())
}
