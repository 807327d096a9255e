package framework

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-kit/log/level"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/internal/conditions"
	"github.com/operatorkit/operatorkit/internal/statusfields"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/trace"
)

// FieldManagerPrefix starts the default field manager of a Framework's status
// writes: FieldManagerPrefix + Config.Name.
const FieldManagerPrefix = "operatorkit-"

// Reasons of the conditions the Framework writes (see Config.Conditions).
// A failed reconciliation's reason is the one its error carries
// (conditioncontext.WithReason), or else names the failing resource and
// step, as "<Resource><Step>Failed" in CamelCase, for example
// "ConfigmapApplyCreateChangeFailed".
const (
	// ReasonSucceeded is Ready's reason after a successful reconciliation.
	ReasonSucceeded = "ReconciliationSucceeded"
	// ReasonProgressingWithRetry is Reconciling's reason after a failure
	// that is retried with backoff.
	ReasonProgressingWithRetry = "ProgressingWithRetry"
	// ReasonNoResourceSet is the reason of Ready and Stalled when no
	// resource set handles the object.
	ReasonNoResourceSet = "NoResourceSet"
	// ReasonInvalidCondition is the reason of Ready and Stalled when a
	// resource set a condition metav1.Condition does not allow.
	ReasonInvalidCondition = "InvalidCondition"
	// ReasonInvalidStatusField is the reason of Ready and Stalled when a
	// resource set a status field that cannot be written
	// (statuscontext.ErrInvalidField).
	ReasonInvalidStatusField = "InvalidStatusField"
)

// Trace steps of the Framework's own writes (resource "framework"): the
// status, and the finalizer patches. A failed one names the step of
// operatorkit_framework_errors_total.
const (
	StepLockCondition   = "lock condition"
	StepWriteStatus     = "write status"
	StepAddFinalizer    = "add finalizer"
	StepRemoveFinalizer = "remove finalizer"
)

// lockTimeResolution is the resolution of a lock's lastTransitionTime
// (metav1.Time is written in whole seconds).
const lockTimeResolution = time.Second

// statusWriteTimeout bounds the end-of-chain status write when the
// reconciliation's own context has ended (a timed-out chain): its failure
// is still recorded.
const statusWriteTimeout = 10 * time.Second

// maxStatusConflicts is how many conflicts of the end-of-chain status write
// are followed by a read of the latest object and another apply.
const maxStatusConflicts = 2

// frameworkTypes are the condition types the Framework decides.
var frameworkTypes = [...]string{conditioncontext.Ready, conditioncontext.Reconciling, conditioncontext.Stalled}

func isFrameworkType(t string) bool {
	return t == conditioncontext.Ready || t == conditioncontext.Reconciling || t == conditioncontext.Stalled
}

// statusRun is the status of one object during one reconciliation with
// Config.Conditions: the conditions as read, the Guard locks written, and
// the end-of-chain write. Its methods are safe for concurrent use (a
// resource may run Guards from several goroutines).
type statusRun struct {
	f          *Framework
	key        string
	obj        any
	uid        types.UID
	generation int64
	deleting   bool
	// setName is the resource set that handles the object, set before the
	// chain runs.
	setName string
	// orig is the object's conditions as the reconciliation read them; the
	// events compare with them.
	orig []metav1.Condition
	// parseErr is set when the object's status.conditions or
	// status.observedGeneration cannot be read.
	parseErr error

	mu sync.Mutex
	// rv, current, observed and managed are the object as read, or as the
	// last Guard lock returned it.
	rv       string
	current  []metav1.Condition
	observed *int64
	managed  []metav1.ManagedFieldsEntry
	// locks are the condition types this reconciliation locked.
	locks map[string]bool
	// gone is set when the finalizer was removed: nothing is left to write.
	gone bool
	// stale is set when a Guard's lock failed with a conflict: the object
	// as read is not the latest, and finish reads it again before it
	// writes.
	stale bool
	// refreshed is set once finish read the object from the API server:
	// rv is then the latest the reconciliation knows of.
	refreshed bool
	// held is set when the object carries the Framework's finalizer (as
	// read, or after the chain's patch added it): it cannot then be
	// deleted, and another created under its name, before this
	// Framework's delete chain removed it, so the status apply needs no
	// precondition (see finish).
	held bool

	// conds is the reconciliation's conditioncontext store, with current
	// and lock: the reconciliation's context answers for it.
	conds conditions.Store
	// fields is the reconciliation's statuscontext store: the context
	// answers for it too.
	fields statusfields.Store
	// statusRead is set once statusMap or statusStruct holds the
	// object's status, read for the status fields only when one is set or
	// carried over (see statusValue).
	statusRead   bool
	statusMap    map[string]any
	statusStruct reflect.Value
}

func (f *Framework) newStatusRun(key string, obj any, acc metav1.Object) *statusRun {
	s := &statusRun{
		f:          f,
		key:        key,
		obj:        obj,
		uid:        acc.GetUID(),
		generation: acc.GetGeneration(),
		deleting:   acc.GetDeletionTimestamp() != nil,
		rv:         acc.GetResourceVersion(),
		managed:    acc.GetManagedFields(),
		held:       f.holds(acc),
	}
	s.current, s.observed, s.parseErr = readStatus(obj)
	if s.parseErr != nil {
		s.parseErr = retry.Permanent(fmt.Errorf("%w: %s: %w", ErrInvalidCondition, s.describe(), s.parseErr))
	}
	s.orig = s.current
	s.conds.Init(s.current, s)
	return s
}

// namespace and objName return the object's namespace and name, from its
// key (cache.MetaNamespaceKeyFunc's "namespace/name", or "name"): kept once,
// in the key, rather than in fields of every reconciliation's statusRun.
func (s *statusRun) namespace() string {
	if ns, _, ok := strings.Cut(s.key, "/"); ok {
		return ns
	}
	return ""
}

func (s *statusRun) objName() string {
	if _, name, ok := strings.Cut(s.key, "/"); ok {
		return name
	}
	return s.key
}

// describe names the object in errors: "<Kind> <namespace/name>".
func (s *statusRun) describe() string {
	if gvk := s.gvk(); gvk.Kind != "" {
		return gvk.Kind + " " + s.key
	}
	return s.f.resource.Resource + " " + s.key
}

// setObject records obj, the object with the Framework's new finalizer, as
// the one the chain reads: a Guard's precondition is its resourceVersion.
func (s *statusRun) setObject(obj any, acc metav1.Object) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.obj = obj
	s.rv = acc.GetResourceVersion()
	s.held = s.f.holds(acc)
}

// holds tells whether acc carries the Framework's finalizer.
func (f *Framework) holds(acc metav1.Object) bool {
	return f.finalizers && slices.Contains(acc.GetFinalizers(), f.finalizer)
}

func (s *statusRun) setGone() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gone = true
}

// gvk returns the apiVersion and kind of the object, from the object itself
// or else from Config.CRD; an empty Kind when neither tells.
func (s *statusRun) gvk() schema.GroupVersionKind {
	if ro, ok := s.obj.(runtime.Object); ok && ro != nil {
		if gvk := ro.GetObjectKind().GroupVersionKind(); gvk.Kind != "" && gvk.Version != "" {
			return gvk
		}
	}
	if s.f.crd != nil {
		return s.f.resource.GroupVersion().WithKind(s.f.crd.Spec.Names.Kind)
	}
	if kind := s.f.kind.Load(); kind != nil {
		return s.f.resource.GroupVersion().WithKind(*kind)
	}
	return schema.GroupVersionKind{}
}

// learnKind reads the object from the API server for its kind, which a
// typed cache (a REST client's decoder) strips and an apply needs, and
// remembers it for the Framework's later writes: one read per process.
func (s *statusRun) learnKind(ctx context.Context) (schema.GroupVersionKind, error) {
	u, err := s.f.client.Resource(s.f.resource).Namespace(s.namespace()).Get(ctx, s.objName(), metav1.GetOptions{})
	if err != nil {
		return schema.GroupVersionKind{}, fmt.Errorf("write status of %s: read its kind: %w", s.describe(), err)
	}
	kind := u.GetKind()
	if kind == "" {
		return schema.GroupVersionKind{}, retry.Permanent(fmt.Errorf("write status of %s: the API server's object has no kind", s.describe()))
	}
	s.f.kind.Store(&kind)
	return s.f.resource.GroupVersion().WithKind(kind), nil
}

// readStatus returns status.conditions and status.observedGeneration of obj.
func readStatus(obj any) ([]metav1.Condition, *int64, error) {
	var content map[string]any
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		content = o.Object
	default:
		if conds, observed, ok := readTypedStatus(obj); ok {
			return conds, observed, nil
		}
		var err error
		if content, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, nil, fmt.Errorf("read status: %w", err)
		}
	}
	status, ok := content["status"].(map[string]any)
	if !ok {
		return nil, nil, nil
	}
	var observed *int64
	switch v := status["observedGeneration"].(type) {
	case nil:
	case int64:
		observed = &v
	case float64:
		g := int64(v)
		observed = &g
	default:
		return nil, nil, fmt.Errorf("status.observedGeneration is a %T, not an integer", v)
	}
	raw, ok := status["conditions"]
	if !ok || raw == nil {
		return nil, observed, nil
	}
	list, ok := raw.([]any)
	if !ok {
		return nil, nil, fmt.Errorf("status.conditions is a %T, not a list", raw)
	}
	conds := make([]metav1.Condition, 0, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, nil, fmt.Errorf("status.conditions[%d] is a %T, not an object", i, item)
		}
		var c metav1.Condition
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &c); err != nil {
			return nil, nil, fmt.Errorf("status.conditions[%d]: %w", i, err)
		}
		conds = append(conds, c)
	}
	return conds, observed, nil
}

// statusFields is where a typed object keeps its status: the index of its
// Status field, and in it the indexes of Conditions ([]metav1.Condition) and
// ObservedGeneration (int64), -1 when absent.
type statusFields struct {
	ok                           bool
	status, conditions, observed int
}

// statusFieldsByType caches statusFields per struct type.
var statusFieldsByType sync.Map // reflect.Type -> statusFields

// lastStatusFields is the type read last and its statusFields: a Framework
// reads one type, so most reads need no map look-up.
var lastStatusFields atomic.Pointer[typeStatusFields]

type typeStatusFields struct {
	t  reflect.Type
	sf statusFields
}

var conditionsType = reflect.TypeFor[[]metav1.Condition]()

// readTypedStatus reads status.conditions and status.observedGeneration of
// a pointer to a struct laid out as kubebuilder generates it (a Status
// struct field with Conditions []metav1.Condition and ObservedGeneration
// int64), without converting the object to unstructured: the steady path
// of every reconciliation reads them. A zero ObservedGeneration is absent
// (omitempty). It returns false for any other object.
func readTypedStatus(obj any) ([]metav1.Condition, *int64, bool) {
	v := reflect.ValueOf(obj)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return nil, nil, false
	}
	v = v.Elem()
	var sf statusFields
	if last := lastStatusFields.Load(); last != nil && last.t == v.Type() {
		sf = last.sf
	} else if cached, ok := statusFieldsByType.Load(v.Type()); ok {
		sf = cached.(statusFields)
		lastStatusFields.Store(&typeStatusFields{t: v.Type(), sf: sf})
	} else {
		sf = statusFieldsOf(v.Type())
		statusFieldsByType.Store(v.Type(), sf)
		lastStatusFields.Store(&typeStatusFields{t: v.Type(), sf: sf})
	}
	if !sf.ok {
		return nil, nil, false
	}
	status := v.Field(sf.status)
	var conds []metav1.Condition
	if sf.conditions >= 0 {
		// The cache's slice: the statusRun never modifies it in place.
		// Through a pointer, which an interface holds without allocating.
		conds = *status.Field(sf.conditions).Addr().Interface().(*[]metav1.Condition)
	}
	var observed *int64
	if sf.observed >= 0 {
		f := status.Field(sf.observed)
		if g := f.Int(); g != 0 {
			// The cache's field when it is an int64 (read only, as the
			// conditions are), else a copy.
			if p, ok := f.Addr().Interface().(*int64); ok {
				observed = p
			} else {
				observed = new(int64)
				*observed = g
			}
		}
	}
	return conds, observed, true
}

func statusFieldsOf(t reflect.Type) statusFields {
	f, ok := statusStructField(t)
	if !ok {
		return statusFields{}
	}
	sf := statusFields{ok: true, status: f.Index[0], conditions: -1, observed: -1}
	for i := 0; i < f.Type.NumField(); i++ {
		g := f.Type.Field(i)
		switch {
		case jsonName(g) == "conditions" && g.Type == conditionsType:
			sf.conditions = i
		case jsonName(g) == "observedGeneration" && g.Type.Kind() == reflect.Int64:
			sf.observed = i
		case jsonName(g) == "conditions" || jsonName(g) == "observedGeneration" || g.Anonymous:
			return statusFields{} // another layout: convert it instead
		}
	}
	return sf
}

// statusStructField returns the field of t, a struct type, that holds the
// status as kubebuilder generates it: Status, a struct, of JSON name
// "status", not promoted from an embedded struct.
func statusStructField(t reflect.Type) (reflect.StructField, bool) {
	f, ok := t.FieldByName("Status")
	return f, ok && len(f.Index) == 1 && f.Type.Kind() == reflect.Struct && jsonName(f) == "status"
}

// jsonName returns the JSON name of struct field f.
func jsonName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
	if name == "" {
		return f.Name
	}
	return name
}

// LockCondition is lock: it makes the statusRun the lock of its conditions
// store without a closure.
func (s *statusRun) LockCondition(ctx context.Context, c metav1.Condition) error {
	return s.lock(ctx, c)
}

// lock is the conditioncontext.LockFunc of the reconciliation: a JSON merge
// patch of status.conditions on the status subresource, with the latest
// resourceVersion the reconciliation knows of the object as precondition:
// the one it read, its own last lock's, or its chain's own last write's
// (see catchUp). Under that precondition the Framework knows the whole
// list, so replacing it loses nobody's condition.
func (s *statusRun) lock(ctx context.Context, c metav1.Condition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.parseErr != nil {
		return s.parseErr
	}
	if err := s.catchUp(ctx); err != nil {
		err = fmt.Errorf("lock condition %s of %s: %w", c.Type, s.describe(), err)
		t := trace.FromContext(ctx)
		t.Record("framework", StepLockCondition, t.Now(), trace.OutcomeError, err)
		return err
	}
	clock := s.f.state.now()
	now := metav1.NewTime(clock.Truncate(time.Second))
	if i := find(s.current, c.Type); i >= 0 && !s.locks[c.Type] && isLock(s.current[i]) {
		// lastTransitionTime holds whole seconds: the lock was taken up to
		// a second after it. Compared with the exact time, it is taken
		// over only once it is older than its lifetime for sure.
		if age := clock.Sub(s.current[i].LastTransitionTime.Time); age < s.f.lockTTL()+lockTimeResolution {
			// Another reconciliation (another replica) runs the task now.
			err := fmt.Errorf("%w: condition %s of %s is locked (%s) since %s by another reconciliation",
				conditioncontext.ErrLocked, c.Type, s.describe(), s.current[i].Reason, s.current[i].LastTransitionTime.UTC().Format(time.RFC3339))
			err = fmt.Errorf("%w: %w", err, apierrors.NewConflict(s.f.resource.GroupResource(), s.objName(), errors.New("condition "+c.Type+" is locked")))
			t := trace.FromContext(ctx)
			t.Record("framework", StepLockCondition, t.Now(), trace.OutcomeError, err)
			return err
		}
	}
	c.ObservedGeneration = s.generation
	// A lock always starts now, even from Unknown: other reconciliations
	// read its age from lastTransitionTime.
	c.LastTransitionTime = now
	list := upsert(s.current, c)

	var patch struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Status struct {
			Conditions []metav1.Condition `json:"conditions"`
		} `json:"status"`
	}
	patch.Metadata.ResourceVersion = s.rv
	patch.Status.Conditions = list
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	t := trace.FromContext(ctx)
	start := t.Now()
	res, err := s.f.client.Resource(s.f.resource).Namespace(s.namespace()).Patch(ctx, s.objName(), types.MergePatchType, data,
		metav1.PatchOptions{FieldManager: s.f.fieldManager}, "status")
	if err != nil {
		if apierrors.IsConflict(err) {
			s.stale = true
		}
		_, err = s.writeError(ctx, "lock condition "+c.Type, err)
		t.Record("framework", StepLockCondition, start, trace.OutcomeError, err)
		return err
	}
	t.Record("framework", StepLockCondition, start, trace.OutcomeDone, nil)
	if s.locks == nil {
		s.locks = map[string]bool{}
	}
	s.locks[c.Type] = true
	s.rv = res.GetResourceVersion()
	s.managed = res.GetManagedFields()
	if conds, observed, err := readStatus(res); err == nil {
		s.current, s.observed = conds, observed
	} else {
		s.current = list
	}
	resourceversioncontext.SetResourceVersion(ctx, s.rv)
	return nil
}

// catchUp brings the object as s knows it (rv, current) to the version the
// chain's own last write of it left, when a resource wrote the object
// itself since the read or the last lock and reported the answer's
// resourceVersion (resourceversioncontext), as a status patch of an
// external ID does: the lock's precondition is then that version, not the
// older one the own write superseded (which would fail the lock with a
// conflict). Only the version of that write is known, not its answer: the
// object is read, and the lock fails with a conflict before it writes, as
// under the older precondition, when the object is at another version
// (someone else wrote since the own write), another generation or with
// other conditions (someone else changed them before the own write, which
// need not have carried a precondition): the lock replaces the whole list,
// and the task was decided on the conditions as read. A reported version
// older than s.rv (compared as shows does) is not the latest, and is
// ignored.
func (s *statusRun) catchUp(ctx context.Context) error {
	own, ok := resourceversioncontext.ResourceVersion(ctx)
	if !ok || shows(s.rv, own) {
		return nil
	}
	u, err := s.f.client.Resource(s.f.resource).Namespace(s.namespace()).Get(ctx, s.objName(), metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("read the object after the chain's own write: %w", err)
	}
	conds, observed, err := readStatus(u)
	if err != nil {
		return retry.Permanent(fmt.Errorf("%w: %s: %w", ErrInvalidCondition, s.describe(), err))
	}
	var changed string
	switch {
	case s.uid != "" && u.GetUID() != s.uid:
		changed = "it was deleted and created again"
	case u.GetResourceVersion() != own:
		changed = "another write followed the chain's own write (version " + own + ")"
	case u.GetGeneration() != s.generation:
		changed = "its generation changed"
	case !sameConditionsSince(conds, s.current):
		changed = "its conditions changed"
	}
	if changed != "" {
		s.stale = true
		return apierrors.NewConflict(s.f.resource.GroupResource(), s.objName(),
			fmt.Errorf("the object has been modified since version %s, the latest the reconciliation knew: %s", s.rv, changed))
	}
	s.rv, s.current, s.observed, s.managed = own, conds, observed, u.GetManagedFields()
	return nil
}

// sameConditionsSince reports whether a and b are the same conditions,
// lastTransitionTime included: another reconciliation's lock of a
// condition that was locked already differs in that alone.
func sameConditionsSince(a, b []metav1.Condition) bool {
	return sameConditions(a, b) && slices.EqualFunc(a, b, func(x, y metav1.Condition) bool {
		return x.LastTransitionTime.Equal(&y.LastTransitionTime)
	})
}

// isLock reports whether c is a Guard's lock.
func isLock(c metav1.Condition) bool {
	return c.Status == metav1.ConditionUnknown && c.Message == conditioncontext.LockMessage
}

// lockTTL is how long a Guard's lock holds: a lock older than that cannot
// belong to a running reconciliation (ReconcileTimeout bounds it), so its
// owner stopped, or failed to record the outcome, and the lock is taken over.
// Its lastTransitionTime holds whole seconds (lockTimeResolution): a lock is
// taken over when that is lockTTL plus lockTimeResolution ago.
func (f *Framework) lockTTL() time.Duration {
	return f.reconcileTimeout + statusWriteTimeout
}

// writeError turns the API server's answer to a status write into the
// Framework's error: a 404 for an object that exists means the CRD has no
// status subresource, and that, like an invalid write, is permanent. gone
// reports a 404 for an object that no longer exists (none of its name, or
// another one, with another UID, created since).
func (s *statusRun) writeError(ctx context.Context, what string, err error) (gone bool, _ error) {
	switch {
	case apierrors.IsNotFound(err):
		u, gerr := s.f.client.Resource(s.f.resource).Namespace(s.namespace()).Get(ctx, s.objName(), metav1.GetOptions{})
		if gerr == nil && s.uid != "" && u.GetUID() != s.uid {
			// Another object of that name, created since the write found
			// none: the reconciled one is gone.
			return true, fmt.Errorf("%s of %s: %w", what, s.describe(), err)
		}
		if gerr == nil {
			return false, retry.Permanent(fmt.Errorf("%w: %s of %s: %s has no status subresource (set spec.versions[].subresources.status in its CRD) to write status.conditions and status.observedGeneration to: %w",
				ErrNoStatusSubresource, what, s.describe(), s.f.resource.GroupResource(), err))
		}
		return apierrors.IsNotFound(gerr), fmt.Errorf("%s of %s: %w", what, s.describe(), err)
	case apierrors.IsInvalid(err), apierrors.IsBadRequest(err):
		return false, retry.Permanent(fmt.Errorf("%s of %s: %w", what, s.describe(), err))
	}
	return false, fmt.Errorf("%s of %s: %w", what, s.describe(), err)
}

// finish writes the status at the end of a reconciliation whose outcome is
// o and returns the outcome, which the write may turn into a failure.
func (s *statusRun) finish(ctx context.Context, o outcome, tr *trace.Trace) outcome {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finishLocked(ctx, o, tr, false)
}

// finishLocked is finish with s.mu held. refused is set on its second run,
// after the API server refused a status field's value (refusedStatusFields):
// it is not retried again.
func (s *statusRun) finishLocked(ctx context.Context, o outcome, tr *trace.Trace, refused bool) outcome {
	if s.gone {
		return o
	}
	if s.parseErr != nil {
		return s.combine(o, s.parseErr)
	}
	set := conditioncontext.List(ctx)
	if len(set) == 0 && s.fields.Len() == 0 && (o.result == ResultSuccess || o.result == ResultRequeue) && !s.deleting && s.steady() {
		return o // the common case, decided without allocating
	}
	valid := set[:0]
	var invalid []error
	for _, c := range set {
		if err := conditioncontext.Validate(c); err != nil {
			invalid = append(invalid, err)
			continue
		}
		valid = append(valid, c)
	}
	fields := s.fields.List()
	validFields := fields[:0]
	var invalidFields []error
	for _, fl := range fields {
		if fl.Err != nil {
			invalidFields = append(invalidFields, fl.Err)
			continue
		}
		validFields = append(validFields, fl)
	}
	var bad []error
	if len(invalid) > 0 {
		bad = append(bad, fmt.Errorf("conditions of %s: %w", s.describe(), errors.Join(invalid...)))
	}
	if len(invalidFields) > 0 {
		bad = append(bad, fmt.Errorf("status fields of %s: %w", s.describe(), errors.Join(invalidFields...)))
	}
	if len(bad) > 0 {
		err := bad[0]
		if len(bad) > 1 {
			err = errors.Join(bad...)
		}
		if o.err != nil {
			err = errors.Join(o.err, err)
		}
		o = outcome{result: ResultPermanent, err: retry.Permanent(err)}
	}

	fw, final := s.frameworkConditions(o, valid, tr)
	decided := map[string]bool{}
	var decidedConds []metav1.Condition
	if final {
		for _, t := range frameworkTypes {
			decided[t] = true
		}
		decidedConds = append(decidedConds, fw...)
	}
	for _, c := range valid {
		if !isFrameworkType(c.Type) {
			decided[c.Type] = true
			decidedConds = append(decidedConds, c)
		}
	}
	observed := s.observed
	if final {
		g := s.generation
		observed = &g
	}

	// First as if the list were atomic, which needs no managedFields: when
	// nothing changes so, nothing changes as a map list either (it removes
	// less), and most reconciliations end here without a write.
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	_, result, _ := s.plan(decidedConds, decided, listAtomic, now, false)
	if sameConditions(result, s.current) && sameGeneration(observed, s.observed) && !s.fieldsChanged(validFields, nil) {
		return o // nothing changed: no write
	}
	wctx := ctx
	switch err := ctx.Err(); {
	case errors.Is(err, context.DeadlineExceeded):
		// The chain timed out: record that anyway, within a bound of its own,
		// unless the Framework was aborted since, or is while it writes.
		rc, _ := ctx.Value(supersededKey{}).(*reconcileContext)
		if rc != nil && rc.base.Err() != nil {
			return o
		}
		var cancel context.CancelFunc
		wctx, cancel = context.WithTimeout(context.WithoutCancel(ctx), statusWriteTimeout)
		defer cancel()
		if rc != nil {
			defer context.AfterFunc(rc.base, cancel)()
		}
	case err != nil:
		// Aborted (Framework.Abort: the Lease was lost): another replica
		// may own the object now, and this one must stop writing.
		return o
	}
	// An object that does not carry the Framework's finalizer (finalizers
	// disabled, or removed by another writer) may have been deleted and
	// created again under its name since it was read, and the new one must
	// not get this one's outcome: the apply then carries the
	// resourceVersion of the object as the reconciliation last knew it, the
	// one precondition the API server honours on the status subresource (it
	// ignores metadata.uid there). A conflict is most often another
	// writer's change: the write reads the latest object, and applies again
	// on it when it is still the same one (up to maxStatusConflicts times;
	// then the conflict is the reconciliation's, retried with the latest
	// object). An object that carries the finalizer is the one read until
	// this Framework removes it, so its apply has no precondition and a
	// concurrent spec change costs nothing; unless it carries over
	// conditions (plan, in a map list) or status fields (applyFields) from
	// the object as read, which must not be written back over another
	// writer's change the cache does not show.
	for attempt := 0; ; attempt++ {
		if s.stale {
			// A lock's (or the apply's) conflict told that the object
			// changed since it was read: what another writer wrote since
			// must not be taken back from the copy as read
			// (observedGeneration, the conditions carried over).
			if err := s.refresh(wctx); err != nil {
				if objectGone(err) {
					// The object is gone, or another one: its own
					// reconciliation writes its status.
					tr.Record("framework", StepWriteStatus, tr.Now(), trace.OutcomeSkipped, nil)
					return o
				}
				return s.combine(o, fmt.Errorf("write status of %s: read the latest object: %w", s.describe(), err))
			}
			s.stale = false
			if !final {
				observed = s.observed
			} else if s.observed != nil && *s.observed > s.generation {
				return o // a newer generation's outcome is there already
			}
		}
		mode := listModeOf(s.managed)
		assumeOwned := false
		// Which status fields the Framework owns matters only for those
		// the object holds and this reconciliation does not set: they are
		// carried over. Without managedFields, read them, unless the
		// Framework knows it owns none (the answer to its last apply of
		// the object in this process told it): once per object and
		// process in a Framework that sets no field, whose writes carry
		// nothing over.
		fieldOwners := len(s.managed) == 0 && !s.refreshed && !s.f.state.ownsNoFields(s.key) && s.holdsUnsetFields(validFields)
		if mode == listUnknown && len(s.current) > 0 || fieldOwners {
			// The cache dropped managedFields (informer.Config.DropManagedFields).
			// The list mode is the CRD's: once learnt, it holds. Which
			// conditions the Framework owns matters only for those it does not
			// decide now; when there are none, its own types are taken as its.
			if known := s.f.knownListMode(); !fieldOwners && known != listUnknown && !s.undecided(decided) {
				mode, assumeOwned = known, true
			} else {
				// Read them from the API server, once per write.
				if err := s.refresh(wctx); err != nil {
					if objectGone(err) {
						tr.Record("framework", StepWriteStatus, tr.Now(), trace.OutcomeSkipped, nil)
						return o
					}
					return s.combine(o, fmt.Errorf("write status of %s: read managedFields: %w", s.describe(), err))
				}
				mode = listModeOf(s.managed)
			}
		}
		s.f.rememberListMode(mode)
		ours, result, applied := s.plan(decidedConds, decided, mode, now, assumeOwned)
		owned := ownedStatusFields(s.managed, s.f.fieldManager)
		if sameConditions(result, s.current) && sameGeneration(observed, s.observed) && !s.fieldsChanged(validFields, owned) {
			return o
		}

		gvk := s.gvk()
		if gvk.Kind == "" {
			var err error
			if gvk, err = s.learnKind(wctx); err != nil {
				return s.combine(o, err)
			}
		}
		status, carried := s.applyFields(validFields, owned)
		if len(status) > 0 {
			// The apply makes the Framework's manager own fields, also
			// when its answer is lost (a timeout): not known until an
			// answer tells.
			s.f.state.setOwnsNoFields(s.key, false)
		}
		status["conditions"] = conditionsToUnstructured(applied)
		if observed != nil {
			status["observedGeneration"] = *observed
		}
		metadata := map[string]any{"name": s.objName()}
		if s.namespace() != "" {
			metadata["namespace"] = s.namespace()
		}
		// In a map list, ours holds the decided conditions and then those
		// carried over (plan).
		if mode == listMap && len(ours) > len(decidedConds) {
			carried = true
		}
		switch {
		case carried && s.rv != "":
			// Conditions or status fields carried over from the object
			// as of s.rv: applied on that version only (a conflict reads
			// the latest), finalizer or not.
			metadata["resourceVersion"] = s.rv
		case !s.held:
			if rv := s.lastResourceVersion(ctx); rv != "" {
				metadata["resourceVersion"] = rv
			}
		}
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvk.GroupVersion().String(),
			"kind":       gvk.Kind,
			"metadata":   metadata,
			"status":     status,
		}}
		start := tr.Now()
		res, err := s.applyStatus(wctx, u)
		if err != nil {
			if apierrors.IsConflict(err) && attempt < maxStatusConflicts {
				tr.Record("framework", StepWriteStatus, start, trace.OutcomeError, err)
				s.stale = true
				continue
			}
			if names := refusedStatusFields(err, validFields); len(names) > 0 && !refused {
				// A value the CRD's schema does not allow (a field it does
				// not declare, a value it rejects) fails the whole apply:
				// that field is invalid, the others and the conditions
				// are written without it.
				tr.Record("framework", StepWriteStatus, start, trace.OutcomeError, err)
				for _, name := range names {
					s.fields.Invalidate(name, fmt.Errorf("%w: status.%s: the API server refuses it: %v", ErrInvalidStatusField, name, err))
				}
				return s.finishLocked(ctx, o, tr, true)
			}
			gone, err := s.writeError(wctx, "write status", err)
			if gone {
				tr.Record("framework", StepWriteStatus, start, trace.OutcomeSkipped, nil)
				return o
			}
			tr.Record("framework", StepWriteStatus, start, trace.OutcomeError, err)
			return s.combine(o, err)
		}
		tr.Record("framework", StepWriteStatus, start, trace.OutcomeDone, nil)
		s.rv = res.GetResourceVersion()
		s.current, s.observed = result, observed
		s.managed = res.GetManagedFields()
		s.f.rememberListMode(listModeOf(s.managed))
		s.noteFieldOwners()
		resourceversioncontext.SetResourceVersion(ctx, s.rv)
		s.events(ctx, ours, decided)
		return o
	}
}

// lastResourceVersion returns the resourceVersion of the object as the
// reconciliation last knew it: the one finish read, else the one the
// chain's last write of the object left (resourceversioncontext: the
// finalizer's patch, a Guard's lock, a resource's write), else the one it
// read.
func (s *statusRun) lastResourceVersion(ctx context.Context) string {
	if s.refreshed {
		return s.rv
	}
	if rv, ok := resourceversioncontext.ResourceVersion(ctx); ok && rv != "" {
		return rv
	}
	return s.rv
}

// applyStatus sends u, the status apply, and returns the object's metadata
// from the answer. With a MetadataClient the answer is the object's
// metadata only (PartialObjectMetadata): all the Framework reads of it,
// without decoding the whole object into maps as the dynamic client does.
func (s *statusRun) applyStatus(ctx context.Context, u *unstructured.Unstructured) (metav1.Object, error) {
	if s.f.metaClient == nil {
		return s.f.client.Resource(s.f.resource).Namespace(s.namespace()).ApplyStatus(ctx, s.objName(), u,
			metav1.ApplyOptions{FieldManager: s.f.fieldManager, Force: true})
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("encode the status of %s: %w", s.describe(), err)
	}
	force := true
	return s.f.metaClient.Resource(s.f.resource).Namespace(s.namespace()).Patch(ctx, s.objName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: s.f.fieldManager, Force: &force}, "status")
}

// plan returns the conditions the Framework writes (decided, with their
// observedGeneration and lastTransitionTime, and in a map list after them
// those it owns and carries over: finish applies those on the version
// read), the object's conditions after the write, and the
// list to apply: the whole list when it is atomic (no
// x-kubernetes-list-type: map), which the API server replaces as a whole.
//
// assumeOwned stands for managedFields that are not known: the Framework's
// own condition types are taken as applied by it.
func (s *statusRun) plan(decidedConds []metav1.Condition, decided map[string]bool, mode listMode, now metav1.Time, assumeOwned bool) (ours, result, applied []metav1.Condition) {
	base := s.current
	ours = make([]metav1.Condition, 0, len(decidedConds)+len(base))
	for _, c := range decidedConds {
		c.ObservedGeneration = s.generation
		c.LastTransitionTime = transitionTime(base, c, now)
		ours = append(ours, c)
	}
	var owned map[string]bool
	if mode == listMap {
		// Server-side apply removes what the manager applied before and
		// omits now: carry over the conditions it owns and did not decide.
		owned = ownedConditionTypes(s.managed, s.f.fieldManager)
		if assumeOwned {
			for _, t := range frameworkTypes {
				owned[t] = true
			}
		}
		for _, c := range base {
			if owned[c.Type] && !decided[c.Type] && find(ours, c.Type) < 0 {
				ours = append(ours, c)
			}
		}
	}
	removed := func(t string) bool {
		return decided[t] && find(ours, t) < 0 && (mode != listMap || owned[t])
	}
	result = merge(base, ours, removed)
	if mode == listMap {
		return ours, result, ours
	}
	return ours, result, result
}

// readyMessage is the message of Ready after a success; " by resource set
// <name>" follows when the resource set has a name.
const (
	readyMessage = "reconciled"
	readyBySet   = " by resource set "
)

// isReadyMessage reports whether m is readyMessageOf(set), without
// allocating.
func isReadyMessage(m, set string) bool {
	if set == "" {
		return m == readyMessage
	}
	return len(m) == len(readyMessage)+len(readyBySet)+len(set) && strings.HasPrefix(m, readyMessage+readyBySet) && strings.HasSuffix(m, set)
}

// readyMessageOf returns the message of Ready after a success of set.
func readyMessageOf(set string) string {
	if set == "" {
		return readyMessage
	}
	return readyMessage + readyBySet + set
}

// steady reports whether the object's status already says what a success
// without conditions of the resources' says: Ready True for this
// generation and resource set, no Reconciling or Stalled, and
// observedGeneration this generation.
func (s *statusRun) steady() bool {
	return steadyStatus(s.current, s.observed, s.generation, s.setName)
}

// steadyStatus reports whether an object of generation whose status holds
// current and observed already shows what a success of resource set
// setName writes: observed is its generation, Ready is True for it, with
// ReasonSucceeded and the set's message, and no Reconciling or Stalled
// condition is there.
func steadyStatus(current []metav1.Condition, observed *int64, generation int64, setName string) bool {
	if observed == nil || *observed != generation {
		return false
	}
	ready := false
	for i := range current {
		c := &current[i]
		switch c.Type {
		case conditioncontext.Ready:
			ready = c.Status == metav1.ConditionTrue && c.Reason == ReasonSucceeded && c.ObservedGeneration == generation &&
				isReadyMessage(c.Message, setName)
			if !ready {
				return false
			}
		case conditioncontext.Reconciling, conditioncontext.Stalled:
			return false
		}
	}
	return ready
}

// undecided reports whether the object has a condition that this
// reconciliation does not decide.
func (s *statusRun) undecided(decided map[string]bool) bool {
	for _, c := range s.current {
		if !decided[c.Type] {
			return true
		}
	}
	return false
}

// knownListMode returns the list mode of status.conditions learnt from an
// object's managedFields, or listUnknown.
func (f *Framework) knownListMode() listMode { return listMode(f.listMode.Load()) }

// rememberListMode records mode, unless it is listUnknown.
func (f *Framework) rememberListMode(mode listMode) {
	if mode != listUnknown {
		f.listMode.Store(int32(mode))
	}
}

// combine returns the outcome of a reconciliation whose outcome was o and
// whose status write failed with err: the write's failure when the chain
// had none, the chain's otherwise (it is retried, or reported, already;
// the write's error is logged).
func (s *statusRun) combine(o outcome, err error) outcome {
	if o.err == nil {
		return errorOutcome(err)
	}
	level.Warn(s.f.logger).Log("object", s.key, "msg", "status write failed", "err", err)
	return o
}

// errRecreated tells that the object under the reconciled object's name is
// another one (another UID): the reconciled one was deleted and the name
// created again since it was read.
var errRecreated = errors.New("the object was deleted and created again")

// objectGone tells whether refresh's error says that the reconciled object
// is gone (not found, or another one under its name).
func objectGone(err error) bool {
	return errors.Is(err, errRecreated) || apierrors.IsNotFound(err)
}

// refresh reads the object from the API server, for its managedFields and
// resourceVersion. It fails with errRecreated when the object there is
// another one than the reconciliation read.
func (s *statusRun) refresh(ctx context.Context) error {
	u, err := s.f.client.Resource(s.f.resource).Namespace(s.namespace()).Get(ctx, s.objName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if s.uid != "" && u.GetUID() != s.uid {
		return errRecreated
	}
	conds, observed, err := readStatus(u)
	if err != nil {
		return retry.Permanent(fmt.Errorf("%w: %s: %w", ErrInvalidCondition, s.describe(), err))
	}
	s.current, s.observed, s.managed = conds, observed, u.GetManagedFields()
	s.rv, s.refreshed = u.GetResourceVersion(), true
	s.noteFieldOwners()
	s.setStatusMap(u.Object)
	if kind := u.GetKind(); kind != "" && s.f.kind.Load() == nil {
		s.f.kind.Store(&kind) // spares learnKind its read
	}
	return nil
}

// frameworkConditions returns Ready, and Reconciling and Stalled when they
// are True, for outcome o, and whether o decides them at all: a conflict, a
// stale cache or a superseded chain leaves them as they are, and so does a
// delete chain that succeeded.
func (s *statusRun) frameworkConditions(o outcome, set []metav1.Condition, tr *trace.Trace) ([]metav1.Condition, bool) {
	cond := func(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: conditions.Fit(message, conditions.MaxMessage)}
	}
	switch o.result {
	case ResultSuccess, ResultRequeue:
		if s.deleting {
			return nil, false
		}
		ready := cond(conditioncontext.Ready, metav1.ConditionTrue, ReasonSucceeded, readyMessageOf(s.setName))
		var abnormal []metav1.Condition
		for _, t := range []string{conditioncontext.Reconciling, conditioncontext.Stalled} {
			if i := find(set, t); i >= 0 && set[i].Status == metav1.ConditionTrue {
				abnormal = append(abnormal, set[i])
				ready = cond(conditioncontext.Ready, metav1.ConditionFalse, set[i].Reason, set[i].Message)
			}
		}
		if i := find(set, conditioncontext.Ready); i >= 0 {
			ready = set[i]
		}
		return append([]metav1.Condition{ready}, abnormal...), true
	case ResultError, ResultPanic:
		reason, message := failureReason(o.err, tr), o.err.Error()
		return []metav1.Condition{
			cond(conditioncontext.Ready, metav1.ConditionFalse, reason, message),
			cond(conditioncontext.Reconciling, metav1.ConditionTrue, ReasonProgressingWithRetry, message),
		}, true
	case ResultPermanent, ResultNoResourceSet:
		reason, message := failureReason(o.err, tr), o.err.Error()
		return []metav1.Condition{
			cond(conditioncontext.Ready, metav1.ConditionFalse, reason, message),
			cond(conditioncontext.Stalled, metav1.ConditionTrue, reason, message),
		}, true
	}
	return nil, false
}

// events records an event for each condition decided in this
// reconciliation whose status or reason differs from the object's before
// it: Warning when it turned bad (a normal-true condition not True, Stalled
// True), Normal otherwise. A condition that appears for the first time in
// its good state (Ready True on an object's first reconciliation) records
// none: that is the expected path, which the status shows, and an event
// per new object would be one more API write per object.
func (s *statusRun) events(ctx context.Context, ours []metav1.Condition, decided map[string]bool) {
	for _, c := range ours {
		if !decided[c.Type] {
			continue
		}
		i := find(s.orig, c.Type)
		if i >= 0 && s.orig[i].Status == c.Status && s.orig[i].Reason == c.Reason {
			continue
		}
		if i < 0 && good(c) {
			continue
		}
		eventType := corev1.EventTypeNormal
		switch c.Type {
		case conditioncontext.Reconciling:
		case conditioncontext.Stalled:
			if c.Status == metav1.ConditionTrue {
				eventType = corev1.EventTypeWarning
			}
		default:
			if c.Status == metav1.ConditionFalse {
				eventType = corev1.EventTypeWarning
			}
		}
		message := fmt.Sprintf("%s is %s", c.Type, c.Status)
		if c.Message != "" {
			message += ": " + c.Message
		}
		s.f.event(ctx, s.obj, eventType, c.Reason, message)
	}
}

// good reports whether c is in its good state: False for the
// abnormal-true conditions Reconciling and Stalled, True for the others.
func good(c metav1.Condition) bool {
	switch c.Type {
	case conditioncontext.Reconciling, conditioncontext.Stalled:
		return c.Status == metav1.ConditionFalse
	}
	return c.Status == metav1.ConditionTrue
}

// failureReason returns the reason of a failed reconciliation:
// "<Resource><Step>Failed" in CamelCase, or a reason of its own for the
// Framework's errors.
func failureReason(err error, tr *trace.Trace) string {
	switch {
	case errors.Is(err, ErrInvalidCondition):
		return ReasonInvalidCondition
	case errors.Is(err, ErrInvalidStatusField):
		return ReasonInvalidStatusField
	case errors.Is(err, ErrNoResourceSet):
		return ReasonNoResourceSet
	}
	if reason, ok := conditioncontext.ReasonOf(err); ok && validReason(reason) {
		return reason
	}
	res := resourceOf(err)
	reason := camel(res) + camel(stepOf(tr, res))
	if reason != "" && (reason[0] < 'A' || reason[0] > 'Z') {
		reason = "Resource" + reason
	}
	// Cut to the API server's limit, keeping the suffix: the reason must
	// end in a letter or digit ("..." would make the status write fail).
	// camel writes ASCII only.
	return reason[:min(len(reason), conditions.MaxReason-len("Failed"))] + "Failed"
}

// validReason reports whether reason is allowed as a condition's reason.
func validReason(reason string) bool {
	return conditioncontext.Validate(metav1.Condition{Type: "T", Status: metav1.ConditionTrue, Reason: reason}) == nil
}

// camel turns s into CamelCase with ASCII letters and digits only:
// "apply create change" -> "ApplyCreateChange", "my-db" -> "MyDb".
func camel(s string) string {
	var b strings.Builder
	upper := true
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z':
			if upper {
				r -= 'a' - 'A'
			}
			b.WriteRune(r)
			upper = false
		case r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
			b.WriteRune(r)
			upper = false
		default:
			upper = true
		}
	}
	return b.String()
}

// transitionTime returns the lastTransitionTime of c: the one it has in
// list when its status stays, now otherwise.
func transitionTime(list []metav1.Condition, c metav1.Condition, now metav1.Time) metav1.Time {
	if i := find(list, c.Type); i >= 0 && list[i].Status == c.Status && !list[i].LastTransitionTime.IsZero() {
		return list[i].LastTransitionTime
	}
	return now
}

func find(list []metav1.Condition, t string) int {
	for i := range list {
		if list[i].Type == t {
			return i
		}
	}
	return -1
}

// upsert returns a copy of list with c in place of the condition of its type,
// or appended.
func upsert(list []metav1.Condition, c metav1.Condition) []metav1.Condition {
	out := append([]metav1.Condition(nil), list...)
	if i := find(out, c.Type); i >= 0 {
		out[i] = c
		return out
	}
	return append(out, c)
}

// merge returns the conditions of the object after a write of ours: base in
// its order with ours in place and the removed types left out, then the
// rest of ours.
func merge(base, ours []metav1.Condition, removed func(string) bool) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(base)+len(ours))
	placed := map[string]bool{}
	for _, c := range base {
		if removed(c.Type) || placed[c.Type] {
			continue
		}
		if i := find(ours, c.Type); i >= 0 {
			out = append(out, ours[i])
			placed[c.Type] = true
			continue
		}
		out = append(out, c)
	}
	for _, c := range ours {
		if !placed[c.Type] {
			out = append(out, c)
			placed[c.Type] = true
		}
	}
	return out
}

// sameConditions reports whether a and b are equal but for
// lastTransitionTime.
func sameConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}

func sameGeneration(a, b *int64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func conditionsToUnstructured(cs []metav1.Condition) []any {
	out := make([]any, 0, len(cs))
	for _, c := range cs {
		m := map[string]any{
			"type":               c.Type,
			"status":             string(c.Status),
			"reason":             c.Reason,
			"message":            c.Message,
			"lastTransitionTime": c.LastTransitionTime.UTC().Format(time.RFC3339),
		}
		if c.ObservedGeneration != 0 {
			m["observedGeneration"] = c.ObservedGeneration
		}
		out = append(out, m)
	}
	return out
}

// listMode is how the API server merges status.conditions in server-side
// apply: per condition type (x-kubernetes-list-type: map, keyed by type,
// as for metav1.Condition in a kubebuilder CRD), or as a whole (an atomic
// list, such as one under x-kubernetes-preserve-unknown-fields).
type listMode int

const (
	listUnknown listMode = iota
	listAtomic
	listMap
)

// listModeOf reads the list mode of status.conditions from managedFields:
// a map list records its entries as k:{"type":...}, an atomic one records
// the list alone.
func listModeOf(managed []metav1.ManagedFieldsEntry) listMode {
	mode := listUnknown
	for _, e := range managed {
		conds, ok := conditionFields(e)
		if !ok {
			continue
		}
		for k := range conds {
			if strings.HasPrefix(k, "k:") {
				return listMap
			}
		}
		mode = listAtomic
	}
	return mode
}

// ownedConditionTypes returns the condition types that manager applied
// (server-side apply) in a map list.
func ownedConditionTypes(managed []metav1.ManagedFieldsEntry, manager string) map[string]bool {
	owned := map[string]bool{}
	for _, e := range managed {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply {
			continue
		}
		conds, _ := conditionFields(e)
		for k := range conds {
			var key struct {
				Type string `json:"type"`
			}
			if strings.HasPrefix(k, "k:") && json.Unmarshal([]byte(k[2:]), &key) == nil && key.Type != "" {
				owned[key.Type] = true
			}
		}
	}
	return owned
}

// conditionFields returns the f:status.f:conditions set of e.
func conditionFields(e metav1.ManagedFieldsEntry) (map[string]json.RawMessage, bool) {
	if e.FieldsV1 == nil || !strings.Contains(string(e.FieldsV1.Raw), `"f:conditions"`) {
		return nil, false
	}
	var root struct {
		Status struct {
			Conditions map[string]json.RawMessage `json:"f:conditions"`
		} `json:"f:status"`
	}
	if err := json.Unmarshal(e.FieldsV1.Raw, &root); err != nil || root.Status.Conditions == nil {
		return nil, false
	}
	return root.Status.Conditions, true
}
