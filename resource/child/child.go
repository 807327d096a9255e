package child

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-kit/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/internal/nilptr"
	"github.com/operatorkit/operatorkit/internal/printable"
	"github.com/operatorkit/operatorkit/resource/crud"
)

// Defaults of Config.
const (
	// DefaultFieldManager is the default Config.FieldManager.
	DefaultFieldManager = "operatorkit"
	// DefaultWaitDelay is the default Config.WaitDelay: how soon a
	// reconciliation that waits for a child that is not ready runs again
	// (the child's own watch, when the operator has one, wakes it sooner).
	DefaultWaitDelay = 5 * time.Second
	// MinWaitDelay is the shortest Config.WaitDelay: shorter, a
	// reconciliation waiting for a child would run again at once, in a
	// hot loop, until the child is ready.
	MinWaitDelay = time.Millisecond
)

// LabelManagedBy is the label set on every child, with the value
// Config.ManagedBy. Only children carrying it are ever deleted.
const LabelManagedBy = "app.kubernetes.io/managed-by"

// ReasonWaitingForChild is the reason of the Reconciling condition set
// while a child is not ready (see Config.Readiness and Config.ReadyWhen).
const ReasonWaitingForChild = "WaitingForChild"

// StepWait names the trace step recorded when the resource stops the chain
// to wait for a child; the step's name is "wait: " followed by what it
// waits for.
const StepWait = "wait"

// Object is what Owner and Child types are: pointers to typed API objects,
// such as *appsv1.Deployment or a custom resource's Go type.
type Object interface {
	metav1.Object
	runtime.Object
}

// Client is the part of a client-go typed client for one kind in one
// namespace that a child resource writes with (DeploymentInterface,
// ConfigMapInterface, or a generated client of a custom resource): Patch
// with server-side apply, and Delete. Use [Typed] to pass the clientset's
// method.
type Client[C any] interface {
	// Patch is called by the resource's create and update steps, once per
	// child to write, with the server-side apply body (pt
	// types.ApplyPatchType, the Config's FieldManager, force), or, for a
	// child that Config.Matches accepts and whose labels or controller
	// reference differ, with a JSON merge patch of those (pt
	// types.MergePatchType, the FieldManager, no force). Applying the
	// same body again changes nothing. A Client that also has client-go's
	// Get method (a typed client, through Typed) is asked for a child
	// before its create when Config.Matches and OwnerLabels are set. It returns the child as the API
	// server answered; an error fails the step (the reconciliation is
	// retried with backoff, or, for an answer that says the child is
	// invalid or not served, not until the owner changes or a resync:
	// ErrInvalidChild).
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (C, error)
	// Delete is called by the resource's delete step, once per child to
	// delete, with the child's UID as precondition and the Config's
	// DeletePropagation. A NotFound or a failed precondition (the child is
	// gone, or another object took its name) counts as deleted; any other
	// error fails the step, and the delete is tried again with the next
	// reconciliation.
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// Typed adapts a typed clientset's per-namespace method, such as
// kubernetes.Interface.AppsV1().Deployments, to Config.Client. The type
// arguments are inferred:
//
//	Client: child.Typed(kube.AppsV1().Deployments),
//
// The method of a cluster-scoped kind takes no namespace (the resource
// calls Client with ""); give a function that ignores it:
//
//	Client: func(string) child.Client[*corev1.Namespace] { return kube.CoreV1().Namespaces() },
func Typed[C any, W Client[C]](client func(namespace string) W) func(namespace string) Client[C] {
	return func(namespace string) Client[C] { return client(namespace) }
}

// Cache is the part of an informer that a child resource reads the current
// children from: *informer.Informer and *operator.SharedInformer (the
// operator's shared informers) and informertest.Informer implement it. Get
// returns the object "namespace/name", List every object. The objects may be
// of the Child type (a typed informer, recommended: Operator.Informer with
// informer.Config.ObjectType set to an empty Child) or
// *unstructured.Unstructured (a dynamic informer), which the resource
// converts on each read.
//
// Optional methods, found by type assertion: Mutation(runtime.Object), to
// record the answers of writes (informer.Informer.Mutation); GVR(), for
// Config.Writes and to check that the Cache is of the children's API group;
// SharedIndexInformer(), so that New adds an event handler
// that indexes the children by owner, and finding an owner's children does
// not scan the whole cache.
type Cache interface {
	// Get returns the cached object of key ("namespace/name", or "name"
	// for a cluster-scoped child), called by the resource's current-state
	// step for each desired child. It must not call the API server; an
	// error fails the step.
	Get(key string) (obj any, exists bool, err error)
	// List returns every cached object, called to find an owner's other
	// children when the Cache offers no SharedIndexInformer to index them
	// (and until the index has seen the informer's first list). The
	// objects are shared: the resource never modifies them.
	List() []any
}

// Writes is told of each apply before it is sent and of its answer (an
// error when the Client panicked: every Begin's func is called once):
// *operator.OwnWrites implements it, so that the watch event of the
// resource's own write does not wake the owner again. When it also
// implements [DeleteWrites] (OwnWrites does), it is told of each delete too.
type Writes interface {
	// Begin is called before each apply of the child namespace/name of
	// resource, and the done it returns exactly once after it, with the
	// answer (nil when the write failed) and the error. Neither may block
	// for long: they run in the reconciliation.
	Begin(resource schema.GroupResource, namespace, name string) (done func(answer metav1.Object, err error))
}

// DeleteWrites is implemented by a [Writes] that is also told of each
// delete, by the child's UID, before it is sent and of its error after, so
// that the watch event of the resource's own delete does not wake the
// owner again (operator.OwnWrites.BeginDelete).
type DeleteWrites interface {
	// BeginDelete is called before each delete of the child of UID uid,
	// and the done it returns exactly once after it with the delete's
	// error (nil, or the API server's: a NotFound too).
	BeginDelete(uid types.UID) (done func(err error))
}

// Config configures a child resource of Owner objects (the objects the
// chain reconciles) that keeps Child objects. Name, Client, Cache and one of
// Desired and DesiredSet are required.
type Config[Owner, Child Object] struct {
	// Name is the resource's name, as in resource.Interface. Required.
	Name string
	// Client writes children in a namespace. Required; see [Typed].
	Client func(namespace string) Client[Child]
	// Cache holds the current children. Required. Give the operator's
	// shared informer of the Child kind (operator.Operator.Informer),
	// ideally label-filtered on LabelManagedBy=ManagedBy and typed
	// (informer.Config.ObjectType); the resource GETs no child, but
	// before the create of one with Matches and OwnerLabels set (see
	// Matches). When Cache has a method GVR() schema.GroupVersionResource,
	// as informer.Informer does, New fails when its group is not GVK's (an
	// informer of another group's resource, such as "cronjobs" of the core
	// group for a CronJob, never holds the children). When Cache has a
	// method Selection() (string, labels.Selector), as informer.Informer
	// does, New fails on a label selector that excludes
	// LabelManagedBy=ManagedBy, and a child outside the Cache's namespace,
	// or one whose labels as written the selector does not select (such
	// as a sharded child without its owner's shard label: see
	// OwnerLabels), is a permanent error of the step: either would be
	// applied in every reconciliation. When Cache has a method
	// MetadataOnly() bool, as informer.Informer does, New refuses a
	// metadata-only Cache (informer.Config.ObjectType
	// &metav1.PartialObjectMetadata{}): the resource compares the
	// children's content with the desired one, which such a cache does not
	// hold.
	Cache Cache

	// Desired returns the one child owner should have, or a nil Child for
	// none (an existing child of this resource is then deleted). It must
	// not change anything. The resource sets the namespace (when empty, to
	// the owner's: a cluster-scoped owner gives none, so Desired names the
	// namespace of each namespaced child it has, any namespace; see Scopes
	// in the package documentation) on the returned object, which then
	// belongs to the resource: return a new object on every call. When it
	// writes the object, it adds the label LabelManagedBy and the
	// controller owner reference to copies of its labels and owner
	// references (a map or slice shared between calls is never changed); a
	// child that needs no write costs no copy. An error fails the step;
	// mark it retry.Permanent when retrying cannot help.
	Desired func(ctx context.Context, owner Owner) (Child, error)
	// DesiredSet, instead of Desired, returns every child owner should have
	// (all of one kind, names unique). Children of this owner that the cache
	// holds (label LabelManagedBy=ManagedBy, controller owner reference to
	// the owner) and the set does not name are deleted.
	DesiredSet func(ctx context.Context, owner Owner) ([]Child, error)

	// ReadyWhen, when set, tells whether a child is ready: the short form
	// of Readiness, called when and as it is (see there). While one is
	// not, the resource stops the chain as waiting (see the package
	// documentation). [Ready] is the kstatus rule for Deployments,
	// StatefulSets, DaemonSets, Jobs, Pods and Services:
	// ReadyWhen: child.Ready[*appsv1.Deployment]. The Reconciling message
	// of a child it finds not ready gives the kstatus reason when those
	// rules find it not ready too ("deployment ns/web not ready: 1 of 2
	// replicas available"), and none otherwise ("cronjob ns/nightly not
	// ready"): to say why, use Readiness. Optional: nil never waits. At
	// most one of ReadyWhen and Readiness.
	ReadyWhen func(child Child) bool
	// Readiness, when set, tells whether a child is ready and, when it is
	// not, why: reason, in a cluster user's words ("no successful run
	// yet", "2 of 3 replicas available"), goes into the Reconciling
	// condition's message, "<kind> <namespace/name> not ready: <reason>"
	// ("<kind> <namespace/name> not ready" when reason is empty; the
	// reason of a ready child is ignored). The reason is made one line of
	// at most 1024 bytes: runs of white space (newlines, tabs) become one
	// space, other control characters are escaped as in a Go string
	// ("\x1b"), invalid UTF-8 becomes U+FFFD, and a longer reason is cut
	// and ends in "...". [ReadinessOf] is [Ready]'s kstatus rules with
	// their reason (Readiness: child.ReadinessOf[*appsv1.Deployment]), for
	// a check of its own to fall back to. While a child is not ready, the
	// resource stops the chain as waiting (see the package documentation).
	//
	// It is called by the resource's update step for each desired child
	// the Cache holds that needs no write (but not for one being deleted,
	// which is never ready: see "Children being deleted" in the package
	// documentation), so in every reconciliation that writes nothing
	// (every resync of every owner), and with the API server's answer of
	// each child the create and update steps apply (again not one being
	// deleted); also when the chain is planned (framework.Plan). Calls for different
	// owners may run concurrently. It must be cheap, and must have no side
	// effects: it must not change child (the Cache's shared object), nor
	// call the API server. A panic in it goes on, as one in Desired does:
	// the Framework recovers it (a *framework.PanicError naming the
	// resource) and retries the owner with backoff. Optional: nil (and a
	// nil ReadyWhen) never waits. At most one of ReadyWhen and Readiness.
	Readiness func(child Child) (ready bool, reason string)
	// Matches, when set, replaces the comparison of the owned fields: it
	// returns true when current needs no write to become desired. desired
	// carries the label LabelManagedBy, the owner labels (OwnerLabels) and
	// the controller reference; a child it accepts whose such labels or
	// controller reference differ still gets those, and those alone,
	// written (a merge patch of its metadata), and with OwnerLabels set
	// the create of a child the Cache does not hold reads it first (one
	// GET), so that a child of an owner moved to another shard is
	// relabelled, not applied: see "Matches and sharding" in the package
	// documentation. Optional. For a kind whose spec cannot change once
	// created (a Job's pod template), func(_, _ C) bool { return true }
	// creates each child once and never writes its content again.
	Matches func(current, desired Child) bool

	// FieldManager is the field manager of the server-side applies.
	// Defaults to DefaultFieldManager. At most 128 bytes of printable
	// UTF-8.
	FieldManager string
	// ManagedBy is the value of the LabelManagedBy label set on children:
	// a label value (at most 63 characters: letters, digits, '-', '_'
	// and '.', starting and ending with a letter or digit). Defaults to
	// FieldManager, which must then be one too. The children of one kind
	// with one ManagedBy belong to one resource of a resource set (see
	// Deletes in the package documentation).
	ManagedBy string
	// OwnerLabels are label keys whose values the children take from
	// their owner: each child written carries the owner's value of every
	// key of OwnerLabels that the owner has (over a value Desired sets),
	// and a child whose value differs from its owner's is written again
	// (with Matches set, only its labels and controller reference).
	// A key the owner lacks is not set; a child that carries it keeps it
	// until its next apply, which removes it (what counts as drift), or,
	// with Matches set, loses it at once (the merge patch of its labels
	// removes it), unless Desired sets it. A key removed from OwnerLabels
	// is not removed from children with Matches (see "Matches and
	// sharding" in the package documentation). With operator.Sharding, give
	// operator.Operator.ShardLabels() here, so that children follow their
	// owner's shard (Sharding.Children). Optional; each must be a valid
	// label key other than LabelManagedBy.
	OwnerLabels []string
	// GVK is the children's group, version and kind, put in the apply
	// body. Defaults to the Child type's kind in client-go's scheme
	// (built-in kinds); required for other kinds. When set, its Version
	// and Kind must not be empty.
	GVK schema.GroupVersionKind
	// OwnerGVK is the owner's group, version and kind, for the owner
	// reference. Defaults to the owner object's apiVersion and kind, or the
	// Owner type's kind in client-go's scheme. When set, its Version and
	// Kind must not be empty.
	OwnerGVK schema.GroupVersionKind
	// Writes, when set, is told of every apply (operator.Operator.OwnWrites).
	// Optional; it needs Resource, or a Cache with a GVR method.
	Writes Writes
	// Resource is the children's group and resource, for Writes. Defaults
	// to the Cache's GVR(); when set, it must name a resource, and be the
	// Cache's, when the Cache has a GVR method.
	Resource schema.GroupResource
	// DeletePropagation is the propagation policy of deletes: Background,
	// Foreground or Orphan. Defaults to metav1.DeletePropagationBackground,
	// which deletes a child's own dependents after it (a Job's pods),
	// where the API server's own default for a batch/v1 Job orphans them.
	DeletePropagation metav1.DeletionPropagation
	// WaitDelay is how soon a reconciliation waiting for a child runs
	// again. Defaults to DefaultWaitDelay; at least MinWaitDelay.
	WaitDelay time.Duration
	// Logger receives debug logs. Optional; defaults to a nop logger. It
	// must not hold a nil pointer.
	Logger log.Logger
}

// New returns the crud resource that keeps the children of each owner as
// config describes (see the package documentation). The error matches
// ErrInvalidConfig and names the field when config is incomplete.
func New[Owner, Child Object](config Config[Owner, Child]) (*crud.Resource, error) {
	o, err := newOps(config)
	if err != nil {
		return nil, err
	}
	return crud.New(crud.Config{Ops: o, Logger: config.Logger})
}

// NewOps is [New] without the crud.Resource around: the crud.Ops, for a
// resource that adds steps of its own. Its errors name the child and the
// owner, not the resource: its caller does (crud.Resource wraps each with
// the resource's name and the step).
func NewOps[Owner, Child Object](config Config[Owner, Child]) (crud.Ops, error) {
	o, err := newOps(config)
	if err != nil {
		return nil, err // not a nil *ops in a non-nil crud.Ops
	}
	return o, nil
}

func newOps[Owner, Child Object](config Config[Owner, Child]) (*ops[Owner, Child], error) {
	childType, ownerType := reflect.TypeFor[Child](), reflect.TypeFor[Owner]()
	switch {
	case config.Name == "":
		return nil, fmt.Errorf("%w: %T.Name must not be empty", ErrInvalidConfig, config)
	case config.Client == nil:
		return nil, fmt.Errorf("%w: %T.Client must not be empty", ErrInvalidConfig, config)
	case config.Cache == nil:
		return nil, fmt.Errorf("%w: %T.Cache must not be empty", ErrInvalidConfig, config)
	case nilptr.Is(config.Cache): // a *operator.SharedInformer never made: New would panic
		return nil, fmt.Errorf("%w: %T.Cache is a nil %T", ErrInvalidConfig, config, config.Cache)
	case isMetadataOnly(config.Cache): // every compare would see no content
		return nil, fmt.Errorf("%w: %T.Cache is a metadata-only informer (informer.Config.ObjectType %T), which holds no child's content to compare with the desired one: give it an informer of whole objects (ObjectType an empty Child)",
			ErrInvalidConfig, config, &metav1.PartialObjectMetadata{})
	case config.Writes != nil && nilptr.Is(config.Writes): // every apply would panic
		return nil, fmt.Errorf("%w: %T.Writes is a nil %T", ErrInvalidConfig, config, config.Writes)
	case config.Logger != nil && nilptr.Is(config.Logger): // its first log line would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	case config.Desired == nil && config.DesiredSet == nil:
		return nil, fmt.Errorf("%w: %T.Desired must not be empty (or set DesiredSet)", ErrInvalidConfig, config)
	case config.Desired != nil && config.DesiredSet != nil:
		return nil, fmt.Errorf("%w: %T.Desired and DesiredSet exclude each other: set one", ErrInvalidConfig, config)
	case config.ReadyWhen != nil && config.Readiness != nil:
		return nil, fmt.Errorf("%w: %T.ReadyWhen and Readiness exclude each other: set one (Readiness tells why a child is not ready)", ErrInvalidConfig, config)
	case config.WaitDelay < 0:
		return nil, fmt.Errorf("%w: %T.WaitDelay must not be negative", ErrInvalidConfig, config)
	case config.WaitDelay > 0 && config.WaitDelay < MinWaitDelay:
		return nil, fmt.Errorf("%w: %T.WaitDelay %s must be 0 (DefaultWaitDelay) or at least %s (MinWaitDelay)", ErrInvalidConfig, config, config.WaitDelay, MinWaitDelay)
	case childType.Kind() != reflect.Pointer || childType.Elem().Kind() != reflect.Struct:
		return nil, fmt.Errorf("%w: %T: Child must be a pointer to a struct, got %s", ErrInvalidConfig, config, childType)
	case ownerType.Kind() != reflect.Pointer || ownerType.Elem().Kind() != reflect.Struct:
		return nil, fmt.Errorf("%w: %T: Owner must be a pointer to a struct, got %s", ErrInvalidConfig, config, ownerType)
	}
	if _, ok := childType.Elem().FieldByName("ObjectMeta"); !ok {
		return nil, fmt.Errorf("%w: %T: Child %s has no ObjectMeta field", ErrInvalidConfig, config, childType)
	}
	for i, k := range config.OwnerLabels {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return nil, fmt.Errorf("%w: %T.OwnerLabels[%d] %q is not a label key: %s", ErrInvalidConfig, config, i, k, strings.Join(errs, "; "))
		}
		switch {
		case k == LabelManagedBy:
			return nil, fmt.Errorf("%w: %T.OwnerLabels[%d] %q is LabelManagedBy, which the resource sets to ManagedBy", ErrInvalidConfig, config, i, k)
		case slices.Contains(config.OwnerLabels[:i], k):
			return nil, fmt.Errorf("%w: %T.OwnerLabels[%d] %q is given twice", ErrInvalidConfig, config, i, k)
		}
	}
	if config.FieldManager == "" {
		config.FieldManager = DefaultFieldManager
	}
	if !printable.FieldManager(config.FieldManager) {
		return nil, fmt.Errorf("%w: %T.FieldManager %q must be at most %d bytes of printable UTF-8", ErrInvalidConfig, config, config.FieldManager, printable.MaxFieldManager)
	}
	managedBy := "ManagedBy"
	if config.ManagedBy == "" {
		config.ManagedBy = config.FieldManager
		managedBy = "FieldManager (the default of ManagedBy)"
	}
	// Every child carries it as a label: the API server would refuse
	// every apply.
	if errs := validation.IsValidLabelValue(config.ManagedBy); len(errs) > 0 {
		return nil, fmt.Errorf("%w: %T.%s %q is not a label value (of %s): %s", ErrInvalidConfig, config, managedBy, config.ManagedBy, LabelManagedBy, strings.Join(errs, "; "))
	}
	if config.WaitDelay == 0 {
		config.WaitDelay = DefaultWaitDelay
	}
	switch config.DeletePropagation {
	case "":
		config.DeletePropagation = metav1.DeletePropagationBackground
	case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
	default:
		return nil, fmt.Errorf("%w: %T.DeletePropagation %q must be %q, %q or %q", ErrInvalidConfig, config, config.DeletePropagation,
			metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan)
	}
	if config.Logger == nil {
		config.Logger = log.NewNopLogger()
	}
	for _, g := range []struct {
		field string
		gvk   schema.GroupVersionKind
	}{{"GVK", config.GVK}, {"OwnerGVK", config.OwnerGVK}} {
		// Half of one: every apply would be refused, or fail as having no
		// owner kind.
		if !g.gvk.Empty() && (g.gvk.Version == "" || g.gvk.Kind == "") {
			return nil, fmt.Errorf("%w: %T.%s %q needs a version and a kind", ErrInvalidConfig, config, g.field, g.gvk)
		}
	}
	if config.GVK.Empty() {
		gvk, ok := schemeKind(childType)
		if !ok {
			return nil, fmt.Errorf("%w: %T.GVK must not be empty: %s is not a kind of client-go's scheme", ErrInvalidConfig, config, childType)
		}
		config.GVK = gvk
	}
	if config.OwnerGVK.Empty() {
		config.OwnerGVK, _ = schemeKind(ownerType) // else from each owner's TypeMeta
	}
	if g, ok := config.Cache.(interface {
		GVR() schema.GroupVersionResource
	}); ok {
		// A cache of another API group never holds the children either: the
		// resource would apply them in every reconciliation, never see them,
		// and never delete them.
		if gvr := g.GVR(); gvr.Group != config.GVK.Group {
			return nil, fmt.Errorf("%w: %T.Cache holds %q of group %q, which never holds this resource's children: they are %s of group %q (GVK)",
				ErrInvalidConfig, config, gvr.Resource, gvr.Group, config.GVK.Kind, config.GVK.Group)
		}
	}
	if config.Writes != nil {
		g, ok := config.Cache.(interface {
			GVR() schema.GroupVersionResource
		})
		switch {
		case config.Resource.Empty() && !ok:
			return nil, fmt.Errorf("%w: %T.Resource must not be empty when Writes is set and Cache has no GVR method", ErrInvalidConfig, config)
		case config.Resource.Empty():
			config.Resource = g.GVR().GroupResource()
		case config.Resource.Resource == "":
			// Writes would be told of a resource no informer watches:
			// the echo of every apply would wake the owner again.
			return nil, fmt.Errorf("%w: %T.Resource %q needs a resource (the plural, such as deployments)", ErrInvalidConfig, config, config.Resource)
		case ok && g.GVR().GroupResource() != config.Resource:
			return nil, fmt.Errorf("%w: %T.Resource %q is not the resource of Cache, %q: Writes would be told of writes to a resource that the Cache's informer does not watch", ErrInvalidConfig, config, config.Resource, g.GVR().GroupResource())
		}
	}
	o := &ops[Owner, Child]{
		config:     config,
		childType:  childType.Elem(),
		apiVersion: config.GVK.GroupVersion().String(),
		logger:     log.With(config.Logger, "resource", config.Name),
		secret:     config.GVK.Group == "" && config.GVK.Kind == "Secret",
	}
	if s, ok := config.Cache.(interface {
		Selection() (string, labels.Selector)
	}); ok {
		// A cache that can never hold the children would make the resource
		// apply them in every reconciliation, and never see them change.
		ns, sel := s.Selection()
		if reqs, selectable := sel.Requirements(); selectable {
			for _, r := range reqs {
				if r.Key() == LabelManagedBy && !r.Matches(labels.Set{LabelManagedBy: config.ManagedBy}) {
					return nil, fmt.Errorf("%w: %T.Cache selects %q, which never holds this resource's children: they carry the label %s=%s (ManagedBy, which defaults to FieldManager)", ErrInvalidConfig, config, sel.String(), LabelManagedBy, config.ManagedBy)
				}
			}
		}
		o.cacheNamespace = ns
		if !sel.Empty() {
			o.selector = sel
		}
	}
	o.mutation, _ = config.Cache.(interface{ Mutation(runtime.Object) })
	if s, ok := config.Cache.(interface {
		SharedIndexInformer() cache.SharedIndexInformer
	}); ok {
		o.owners = sharedOwnerIndex(s.SharedIndexInformer(), config.ManagedBy)
	}
	return o, nil
}

// isMetadataOnly reports whether c says it caches metadata only (a
// MetadataOnly method, as informer.Informer has, that returns true).
func isMetadataOnly(c Cache) bool {
	m, ok := c.(interface{ MetadataOnly() bool })
	return ok && m.MetadataOnly()
}

// schemeKind returns the kind client-go's scheme registers for t.
func schemeKind(t reflect.Type) (schema.GroupVersionKind, bool) {
	obj, ok := reflect.New(t.Elem()).Interface().(runtime.Object)
	if !ok {
		return schema.GroupVersionKind{}, false
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionKind{}, false
	}
	return gvks[0], true
}
