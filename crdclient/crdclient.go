package crdclient

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsclientv1 "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/typed/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// The parameters of the backoff used when EnsureCreated or EnsureDeleted is
// given a nil backoff.BackOff: exponential from DefaultInitialInterval,
// growing by half each time up to DefaultMaxInterval, giving up after
// DefaultMaxElapsedTime. A CRD is usually established within a second or
// two; deleting one with many custom resources can take longer.
const (
	DefaultInitialInterval = 50 * time.Millisecond
	DefaultMaxInterval     = 2 * time.Second
	DefaultMaxElapsedTime  = time.Minute
)

// NewDefaultBackOff returns the backoff used when none is given; see
// DefaultInitialInterval.
func NewDefaultBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = DefaultInitialInterval
	b.Multiplier = 1.5
	b.MaxInterval = DefaultMaxInterval
	b.MaxElapsedTime = DefaultMaxElapsedTime
	b.Reset()
	return b
}

// Config configures a CRDClient.
type Config struct {
	// Client talks to the apiextensions API. Required.
	Client apiextensionsclient.Interface
	// Dynamic reads and writes the custom resources of a CRD in
	// MigrateStorage, and is used by nothing else. Required by
	// MigrateStorage only; a nil pointer in it is an error.
	Dynamic dynamic.Interface
	// MigrationPageSize is how many objects MigrateStorage lists per
	// request (the list's limit), and so at most holds in memory at once.
	// Defaults to DefaultMigrationPageSize; must not be negative.
	MigrationPageSize int64
	// Logger receives debug logs of each step, and an info line at the
	// start and the end of a storage migration (with the count of objects
	// written and the duration). nil means no logs; a nil pointer in it
	// is an error.
	Logger log.Logger
}

// CRDClient creates, updates and deletes CustomResourceDefinitions, waits
// for the API server to act on them, and migrates their stored objects to
// a new storage version. Create it with New; it is safe for
// concurrent use.
type CRDClient struct {
	crds      apiextensionsclientv1.CustomResourceDefinitionInterface
	discovery discovery.DiscoveryInterface
	dynamic   dynamic.Interface
	pageSize  int64
	logger    log.Logger
}

// New validates config and returns a CRDClient. Errors match
// ErrInvalidConfig and name the field: Client empty or a nil pointer,
// Dynamic or Logger a nil pointer, or MigrationPageSize negative.
func New(config Config) (*CRDClient, error) {
	if config.Client == nil {
		return nil, fmt.Errorf("%w: %T.Client must not be empty", ErrInvalidConfig, config)
	}
	if nilptr.Is(config.Client) { // a clientset whose NewForConfig failed
		return nil, fmt.Errorf("%w: %T.Client is a nil %T", ErrInvalidConfig, config, config.Client)
	}
	if config.Logger != nil && nilptr.Is(config.Logger) { // its first log line would panic
		return nil, fmt.Errorf("%w: %T.Logger is a nil %T", ErrInvalidConfig, config, config.Logger)
	}
	if config.Dynamic != nil && nilptr.Is(config.Dynamic) { // a client whose NewForConfig failed
		return nil, fmt.Errorf("%w: %T.Dynamic is a nil %T", ErrInvalidConfig, config, config.Dynamic)
	}
	if config.MigrationPageSize < 0 {
		return nil, fmt.Errorf("%w: %T.MigrationPageSize must not be negative, is %d", ErrInvalidConfig, config, config.MigrationPageSize)
	}
	if config.MigrationPageSize == 0 {
		config.MigrationPageSize = DefaultMigrationPageSize
	}
	if config.Logger == nil {
		config.Logger = log.NewNopLogger()
	}
	return &CRDClient{
		crds:      config.Client.ApiextensionsV1().CustomResourceDefinitions(),
		discovery: config.Client.Discovery(),
		dynamic:   config.Dynamic,
		pageSize:  config.MigrationPageSize,
		logger:    config.Logger,
	}, nil
}

// EnsureCreated makes the API server serve crd and waits until it does.
//
// If no CRD of that name exists it is created. If one exists, its spec is
// replaced by crd.Spec (an update with the resourceVersion just read,
// retried on conflict at once a few times, then at b's pace; skipped when
// the spec is already equal after defaulting); its labels, annotations and
// status are left alone. A CRD that
// is being deleted is waited for and then created anew. Then EnsureCreated
// polls until the conditions NamesAccepted and Established are True (and,
// where the server reports it, observed for the current generation), the
// accepted names are the requested ones, and API discovery lists the
// resource under every served version, so that every served version answers
// requests when EnsureCreated returns. Once the accepted names are the
// requested ones, a NamesAccepted left False by an earlier spec does not
// count (see "Establishment" in the package documentation).
//
// b paces the polls and the retries of transient failures (timeouts, 429,
// 5xx, refused or reset connections); it is Reset first and advanced by
// the call, so give each concurrent call a BackOff of its own; nil means
// NewDefaultBackOff. EnsureCreated returns:
//   - nil once the CRD is established;
//   - an error wrapping ErrInvalidArgument for a nil crd, an empty name or
//     a b that holds a nil pointer;
//   - an error wrapping ErrInvalidCRD (and the server's StatusError) when the
//     server rejects the CRD as invalid, at once;
//   - an error wrapping ErrCRDNotAccepted, with the condition's reason and
//     message and the CRDs that hold the requested names, when
//     NamesAccepted is False for names other than the accepted ones, at
//     once (see "Establishment" in the package documentation);
//   - an error wrapping ErrTimeout when b gives up, or context.Cause(ctx)
//     when ctx ends, with the last state seen; the CRD is left as it is,
//     never deleted;
//   - any other API error, wrapped, at once.
//
// crd is not modified. EnsureCreated is idempotent.
func (c *CRDClient) EnsureCreated(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, b backoff.BackOff) error {
	if err := validate(crd, b); err != nil {
		return err
	}
	logger := log.With(c.logger, "crd", crd.Name)
	applied := false
	// updated is set when this call changed the spec of an existing CRD:
	// its conditions may then describe the spec before.
	updated := false
	return poll(ctx, initBackOff(b), "establish CRD "+crd.Name, func(ctx context.Context) error {
		if !applied {
			u, err := c.apply(ctx, logger, crd)
			if err != nil {
				return err
			}
			applied, updated = true, updated || u
		}
		current, err := c.crds.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			applied = false
			return pending("deleted by someone else while waiting for it")
		case err != nil:
			return classify(fmt.Sprintf("get CRD %s", crd.Name), err)
		case current.DeletionTimestamp != nil:
			applied = false
			return pending("being deleted")
		}
		if err := established(current); err != nil {
			if errors.Is(err, ErrCRDNotAccepted) {
				return c.notAccepted(ctx, current, updated, err)
			}
			return err
		}
		return c.discovered(ctx, current)
	})
}

// notAccepted returns the error of crd, whose NamesAccepted condition is
// False (err): the names the CRDs of its group use, read as the API
// server's naming controller reads them, tell which CRD holds a requested
// name, and the error says so. When none does and the condition may be
// from before this call's update (updated, and the server does not report
// the condition's observedGeneration), the condition is stale: the names
// controller has not looked at the new names yet, and the wait goes on.
// When the CRDs cannot be listed (no RBAC for it), err is returned as it
// is.
func (c *CRDClient) notAccepted(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, updated bool, err error) error {
	list, lerr := c.crds.List(ctx, metav1.ListOptions{})
	if lerr != nil {
		return err
	}
	conflicts := namesConflicts(crd, list.Items)
	if len(conflicts) > 0 {
		return fmt.Errorf("%w: %s", err, strings.Join(conflicts, "; "))
	}
	names := condition(crd, apiextensionsv1.NamesAccepted)
	if updated && names.ObservedGeneration == 0 {
		return pending(fmt.Sprintf("NamesAccepted is False (reason %s: %s), but no CRD of group %s uses the names of the updated spec: waiting for the API server to check them again",
			names.Reason, names.Message, crd.Spec.Group))
	}
	return err
}

// namesConflicts returns, as the API server's naming controller decides
// them, the requested names of crd (spec.names, defaulted) that are not its
// accepted ones and that a CRD of its group (crd itself included) already
// uses as an accepted name, each with the CRD that uses it. all holds the
// CRDs of the cluster.
func namesConflicts(crd *apiextensionsv1.CustomResourceDefinition, all []apiextensionsv1.CustomResourceDefinition) []string {
	resources := map[string]string{} // plural, singular or short name -> "<what> of CRD <name>"
	kinds := map[string]string{}     // kind or list kind -> "<what> of CRD <name>"
	for i := range all {
		other := &all[i]
		if other.Spec.Group != crd.Spec.Group {
			continue
		}
		if other.Name == crd.Name {
			other = crd
		}
		a := other.Status.AcceptedNames
		use := func(m map[string]string, name, what string) {
			if name != "" {
				if _, ok := m[name]; !ok {
					m[name] = what + " of CRD " + other.Name
				}
			}
		}
		use(resources, a.Plural, "the plural")
		use(resources, a.Singular, "the singular")
		for _, n := range a.ShortNames {
			use(resources, n, "a short name")
		}
		use(kinds, a.Kind, "the kind")
		use(kinds, a.ListKind, "the list kind")
	}
	requested := defaultedSpec(&crd.Spec).Names
	accepted := crd.Status.AcceptedNames
	var out []string
	check := func(what, name, acceptedName string, used map[string]string) {
		if name == acceptedName {
			return
		}
		if by, ok := used[name]; ok {
			out = append(out, fmt.Sprintf("%s %q is %s", what, name, by))
		}
	}
	check("plural", requested.Plural, accepted.Plural, resources)
	check("singular", requested.Singular, accepted.Singular, resources)
	for _, n := range requested.ShortNames {
		if !slices.Contains(accepted.ShortNames, n) {
			check("short name", n, "", resources)
		}
	}
	check("kind", requested.Kind, accepted.Kind, kinds)
	check("list kind", requested.ListKind, accepted.ListKind, kinds)
	return out
}

// discovered returns nil when every served version of crd lists its
// resource in the API server's discovery, and a pending error otherwise.
// Discovery and the custom resource handler follow the same informer inside
// the API server, so a version that discovery lists is served.
func (c *CRDClient) discovered(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		gv := crd.Spec.Group + "/" + v.Name
		list, err := c.resourcesOf(ctx, gv)
		if err != nil {
			return err
		}
		found := false
		for _, r := range list.APIResources {
			found = found || r.Name == crd.Spec.Names.Plural
		}
		if !found {
			return pending(fmt.Sprintf("resource %s not in discovery of %s yet", crd.Spec.Names.Plural, gv))
		}
	}
	return nil
}

// resourcesOf returns the resources that discovery lists in gv ("group/
// version"): a pending error while the API server does not list gv yet
// (NotFound) or fails transiently, another one classified.
func (c *CRDClient) resourcesOf(ctx context.Context, gv string) (*metav1.APIResourceList, error) {
	var list *metav1.APIResourceList
	var err error
	if d, ok := c.discovery.(discovery.ServerResourcesInterfaceWithContext); ok {
		list, err = d.ServerResourcesForGroupVersionWithContext(ctx, gv)
	} else {
		list, err = c.discovery.ServerResourcesForGroupVersion(gv)
	}
	switch {
	case apierrors.IsNotFound(err):
		return nil, pending(fmt.Sprintf("version %s not in discovery yet", gv))
	case err != nil:
		return nil, classify("discover "+gv, err)
	}
	return list, nil
}

// apply creates crd or updates the spec of the existing CRD; updated
// reports an update.
func (c *CRDClient) apply(ctx context.Context, logger log.Logger, crd *apiextensionsv1.CustomResourceDefinition) (updated bool, _ error) {
	desired := crd.DeepCopy()
	desired.ResourceVersion = ""
	desired.Status = apiextensionsv1.CustomResourceDefinitionStatus{}
	_, err := c.crds.Create(ctx, desired, metav1.CreateOptions{})
	switch {
	case err == nil:
		level.Debug(logger).Log("msg", "created CRD")
		return false, nil
	case apierrors.IsAlreadyExists(err):
		return c.updateSpec(ctx, logger, desired)
	case apierrors.IsInvalid(err):
		return false, rejected("create", crd.Name, err)
	}
	return false, classify("create CRD "+crd.Name, err)
}

// updateSpec replaces the spec of the existing CRD by desired's; updated
// reports that it did (it was not equal).
func (c *CRDClient) updateSpec(ctx context.Context, logger log.Logger, desired *apiextensionsv1.CustomResourceDefinition) (updated bool, _ error) {
	want := defaultedSpec(&desired.Spec)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := ctx.Err(); err != nil {
			return err
		}
		current, err := c.crds.Get(ctx, desired.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if current.DeletionTimestamp != nil {
			return pending("being deleted; will create it again once it is gone")
		}
		if equality.Semantic.DeepEqual(defaultedSpec(&current.Spec), want) {
			level.Debug(logger).Log("msg", "CRD exists with the same spec")
			return nil
		}
		next := current.DeepCopy()
		next.Spec = *desired.Spec.DeepCopy()
		if _, err := c.crds.Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return err
		}
		updated = true
		level.Debug(logger).Log("msg", "updated CRD spec")
		return nil
	})
	var p *pendingError
	switch {
	case err == nil || errors.As(err, &p):
		return updated, err
	case apierrors.IsNotFound(err):
		return false, pending("deleted by someone else while updating it")
	case apierrors.IsConflict(err):
		// Others keep writing the CRD: try again after the backoff's
		// next interval, with the CRD as it is then.
		return false, pending(fmt.Sprintf("update CRD %s: still conflicting after %d tries: %v", desired.Name, retry.DefaultRetry.Steps, err))
	case apierrors.IsInvalid(err):
		return false, rejected("update", desired.Name, err)
	}
	return false, classify("update CRD "+desired.Name, err)
}

// established returns nil when crd is served, an error wrapping
// ErrCRDNotAccepted when its names are refused, and a pending error
// otherwise.
//
// A CRD whose requested names (spec.names, defaulted) are its accepted
// ones is served under them, whatever NamesAccepted says: the API server's
// naming controller does not look at such a CRD again, so a False left
// from an earlier spec (a short name that another CRD held, then taken
// out) stays False for good.
func established(crd *apiextensionsv1.CustomResourceDefinition) error {
	requested := defaultedSpec(&crd.Spec)
	served := equality.Semantic.DeepEqual(crd.Status.AcceptedNames, requested.Names)
	names := condition(crd, apiextensionsv1.NamesAccepted)
	if !served && names != nil && names.Status == apiextensionsv1.ConditionFalse && current(crd, names) {
		return fmt.Errorf("%w: CRD %s: NamesAccepted is False, reason %s: %s", ErrCRDNotAccepted, crd.Name, names.Reason, names.Message)
	}
	for _, t := range []apiextensionsv1.CustomResourceDefinitionConditionType{apiextensionsv1.NamesAccepted, apiextensionsv1.Established} {
		if t == apiextensionsv1.NamesAccepted && served {
			continue
		}
		c := condition(crd, t)
		switch {
		case c == nil:
			return pending(fmt.Sprintf("no %s condition yet", t))
		case c.Status != apiextensionsv1.ConditionTrue:
			return pending(fmt.Sprintf("%s is %s, reason %s: %s", t, c.Status, c.Reason, c.Message))
		case !current(crd, c):
			return pending(fmt.Sprintf("%s observed generation %d, not %d yet", t, c.ObservedGeneration, crd.Generation))
		}
	}
	if !served {
		return pending(fmt.Sprintf("accepted names %+v are not the requested %+v yet", crd.Status.AcceptedNames, requested.Names))
	}
	return nil
}

// defaultedSpec returns a copy of spec with the defaults the API server
// applies, so that specs read from the server and given by callers compare
// equal when they mean the same.
func defaultedSpec(spec *apiextensionsv1.CustomResourceDefinitionSpec) apiextensionsv1.CustomResourceDefinitionSpec {
	crd := &apiextensionsv1.CustomResourceDefinition{Spec: *spec.DeepCopy()}
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(crd)
	return crd.Spec
}

func condition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) *apiextensionsv1.CustomResourceDefinitionCondition {
	for i := range crd.Status.Conditions {
		if crd.Status.Conditions[i].Type == t {
			return &crd.Status.Conditions[i]
		}
	}
	return nil
}

// current reports whether c reflects crd's current generation. Servers
// without the CRDObservedGenerationTracking feature leave ObservedGeneration
// zero; their conditions are taken as current.
func current(crd *apiextensionsv1.CustomResourceDefinition, c *apiextensionsv1.CustomResourceDefinitionCondition) bool {
	return c.ObservedGeneration == 0 || c.ObservedGeneration >= crd.Generation
}

// EnsureDeleted deletes the CRD named crd.Name, and with it every custom
// resource of that kind, and waits until it is gone. A CRD that does not
// exist is success, at once.
//
// The delete carries the UID of the CRD read just before (a precondition),
// so a CRD re-created by someone else in between is never deleted; if one
// appears while waiting, the CRD that was deleted is gone and EnsureDeleted
// returns nil. b paces the polls and the retries of transient failures; it
// is Reset first and advanced by the call (one BackOff per concurrent
// call), and nil means NewDefaultBackOff. When b gives up (error
// wrapping ErrTimeout) or ctx ends (wrapping context.Cause), the error says
// what was last seen, typically the finalizers still pending. It returns an
// error wrapping ErrInvalidArgument for a nil crd, an empty name or a b
// that holds a nil pointer. Only crd.Name is used; crd is not modified.
// EnsureDeleted is idempotent.
func (c *CRDClient) EnsureDeleted(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, b backoff.BackOff) error {
	if err := validate(crd, b); err != nil {
		return err
	}
	logger := log.With(c.logger, "crd", crd.Name)
	var uid types.UID // of the CRD being deleted
	return poll(ctx, initBackOff(b), "delete CRD "+crd.Name, func(ctx context.Context) error {
		current, err := c.crds.Get(ctx, crd.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			level.Debug(logger).Log("msg", "CRD is gone")
			return nil
		case err != nil:
			return classify("get CRD "+crd.Name, err)
		case uid != "" && current.UID != uid:
			level.Debug(logger).Log("msg", "CRD is gone and was created again by someone else")
			return nil
		}
		uid = current.UID
		if current.DeletionTimestamp == nil {
			err := c.crds.Delete(ctx, crd.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
			switch {
			case apierrors.IsNotFound(err):
				return nil
			case apierrors.IsConflict(err):
				uid = "" // replaced between Get and Delete: look again
				return pending("replaced while deleting it")
			case err != nil:
				return classify("delete CRD "+crd.Name, err)
			}
			level.Debug(logger).Log("msg", "deleted CRD, waiting for it to be gone")
		}
		return pending(fmt.Sprintf("still there, finalizers %v", current.Finalizers))
	})
}

func validate(crd *apiextensionsv1.CustomResourceDefinition, b backoff.BackOff) error {
	if crd == nil {
		return fmt.Errorf("%w: crd must not be nil", ErrInvalidArgument)
	}
	if crd.Name == "" {
		return fmt.Errorf("%w: crd.Name must not be empty", ErrInvalidArgument)
	}
	if b != nil && nilptr.Is(b) { // its Reset would panic
		return fmt.Errorf("%w: b is a nil %T (pass nil for NewDefaultBackOff)", ErrInvalidArgument, b)
	}
	return nil
}

func initBackOff(b backoff.BackOff) backoff.BackOff {
	if b == nil {
		return NewDefaultBackOff()
	}
	b.Reset()
	return b
}

// pendingError says that the wanted state is not reached yet and why; poll
// tries again after the next backoff interval.
type pendingError struct{ reason string }

func (e *pendingError) Error() string { return e.reason }

func pending(reason string) error { return &pendingError{reason: reason} }

// classify turns a transient API or network error into a pending one, and
// wraps any other with what.
func classify(what string, err error) error {
	if apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err) ||
		utilnet.IsConnectionRefused(err) || utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err) {
		return pending(fmt.Sprintf("%s: %v", what, err))
	}
	return fmt.Errorf("%s: %w", what, err)
}

func rejected(op, name string, err error) error {
	return fmt.Errorf("%w: %s of CRD %s refused by the API server (reason %s): %w", ErrInvalidCRD, op, name, apierrors.ReasonForError(err), err)
}

// poll runs op until it returns anything but a pending error, waiting b's
// next interval between attempts. It returns op's result, or an error with
// the last pending reason when b stops (ErrTimeout) or ctx ends.
func poll(ctx context.Context, b backoff.BackOff, what string, op func(context.Context) error) error {
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", what, context.Cause(ctx))
		}
		err := op(ctx)
		var p *pendingError
		if !errors.As(err, &p) {
			if err != nil && ctx.Err() != nil {
				return fmt.Errorf("%s: %w", what, errors.Join(err, context.Cause(ctx)))
			}
			return err
		}
		d := b.NextBackOff()
		if d == backoff.Stop {
			return fmt.Errorf("%s: %w: last seen: %s", what, ErrTimeout, p.reason)
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: last seen: %s: %w", what, p.reason, context.Cause(ctx))
		case <-t.C:
		}
	}
}
