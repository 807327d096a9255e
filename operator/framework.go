package operator

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// FrameworkOptions are the command-line options of the Framework an
// operator binary runs: which objects it watches and how hard it works.
// Bind them with BindFlags, check them with Validate, and use them in the
// Framework's informers and framework.Config.
type FrameworkOptions struct {
	// Namespace restricts the Framework to the objects of one namespace
	// (--namespace). Empty: every namespace. Validate wants a namespace
	// name (a DNS-1123 label).
	Namespace string
	// Workers is how many objects are reconciled at the same time
	// (--workers). Zero in BindFlags: framework.DefaultWorkers. Validate
	// wants 1 to framework.MaxWorkers.
	Workers int
	// ResyncPeriod is how often every object is reconciled again without a
	// change (--resync-period): the resync period of the Framework's
	// informers. Zero in BindFlags: DefaultResyncPeriod. Validate wants
	// at least informer.MinResyncPeriod.
	ResyncPeriod time.Duration
	// ReconcileTimeout bounds one reconciliation (--reconcile-timeout).
	// Zero in BindFlags: framework.DefaultReconcileTimeout.
	ReconcileTimeout time.Duration
	// DryRun makes the Framework reconcile and record plans without
	// writing anything (--dry-run); see framework.Config.DryRun.
	DryRun bool
}

// BindFlags registers the options on fs, with a help text each; the
// default of a flag is the value already set in o or, where o leaves it
// zero, the default documented on the field. It panics, as flag.FlagSet
// does, if fs has a flag of one of these names already.
func (o *FrameworkOptions) BindFlags(fs *flag.FlagSet) {
	fs.StringVar(&o.Namespace, "namespace", o.Namespace, "namespace of the objects to reconcile (default: all namespaces)")
	fs.IntVar(&o.Workers, "workers", orDefaultInt(o.Workers, framework.DefaultWorkers), "number of objects reconciled at the same time")
	fs.DurationVar(&o.ResyncPeriod, "resync-period", orDefaultDuration(o.ResyncPeriod, DefaultResyncPeriod), "how often every object is reconciled again without a change")
	fs.DurationVar(&o.ReconcileTimeout, "reconcile-timeout", orDefaultDuration(o.ReconcileTimeout, framework.DefaultReconcileTimeout), "upper bound of one reconciliation")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "reconcile and record plans (see /debug/reconciliations) but write nothing")
}

// Validate checks the options as parsed from the flags and returns nil or
// one line per bad value (joined with errors.Join) naming the flag, such
// as "invalid value 0 for flag --workers: must be at least 1".
func (o FrameworkOptions) Validate() error {
	var errs []error
	if o.Workers < 1 {
		errs = append(errs, fmt.Errorf("invalid value %d for flag --workers: must be at least 1", o.Workers))
	}
	if o.Workers > framework.MaxWorkers {
		errs = append(errs, fmt.Errorf("invalid value %d for flag --workers: must be at most %d", o.Workers, framework.MaxWorkers))
	}
	if o.ResyncPeriod < informer.MinResyncPeriod {
		errs = append(errs, fmt.Errorf("invalid value %s for flag --resync-period: must be at least %s", o.ResyncPeriod, informer.MinResyncPeriod))
	}
	if o.ReconcileTimeout <= 0 {
		errs = append(errs, fmt.Errorf("invalid value %s for flag --reconcile-timeout: must be positive", o.ReconcileTimeout))
	}
	return errors.Join(append(errs, o.validateNamespace())...)
}

// validateNamespace is Validate's check of Namespace, which the plan
// command, with no other Framework flag, makes alone.
func (o FrameworkOptions) validateNamespace() error {
	if o.Namespace == "" {
		return nil
	}
	if msgs := validation.IsDNS1123Label(o.Namespace); len(msgs) > 0 {
		return fmt.Errorf("invalid value %q for flag --namespace: %s", o.Namespace, strings.Join(msgs, "; "))
	}
	return nil
}

func orDefaultInt(n, def int) int {
	if n == 0 {
		return def
	}
	return n
}

// NewFramework is framework.New for a Framework that this Operator runs:
// it completes config from the Operator, creates the Framework and adds it
// (Add). Empty fields default to: Client to Dynamic(); MetadataClient,
// where the Framework writes finalizers (neither DryRun nor
// DisableFinalizers), to Metadata(), so that each finalizer patch and
// status apply is answered with the object's metadata only; Registerer to Registry();
// Logger to the Operator's logger (none when Config.Logger was nil, so that
// the Framework builds no log line for a logger that drops them all);
// EventRecorder, unless DryRun, to
// EventRecorder(client-go's scheme), which can refer to objects of other
// kinds only when they carry apiVersion and kind (as those of Informer with
// ObjectType, of a dynamic informer or of informer.ConvertTo do, but not
// those of a clientset's RESTClient; otherwise pass a recorder made with a
// scheme that knows them); CRDClient, when CRD is set, to a crdclient on
// Config.RESTConfig, with Dynamic() for framework.Config.MigrateStorage. The clients are built from Config.RESTConfig with
// Config.Name as user agent unless it has one; Dynamic() and Metadata()
// once, by New, and shared by every Framework. With Config.Sharding, the
// UpdatePredicate (given or the default) is wrapped so that the drain label
// appearing on an object does not start a reconciliation of it: the object
// is about to be handed to another replica. The error is framework.New's
// or Add's.
func (o *Operator) NewFramework(config framework.Config) (*framework.Framework, error) {
	config, err := o.frameworkConfig(config)
	if err != nil {
		return nil, err
	}
	f, err := framework.New(config)
	if err != nil {
		return nil, err
	}
	if err := o.Add(f); err != nil {
		return nil, err
	}
	return f, nil
}

// frameworkConfig fills the empty fields of config as NewFramework
// documents.
func (o *Operator) frameworkConfig(config framework.Config) (framework.Config, error) {
	if config.Client == nil {
		config.Client = o.dynamic
	}
	if config.MetadataClient == nil && !config.DryRun && !config.DisableFinalizers {
		config.MetadataClient = o.metadata
	}
	if config.Registerer == nil {
		config.Registerer = o.registry
	}
	if config.Logger == nil && o.config.Logger != nil {
		config.Logger = o.logger
	}
	if config.EventRecorder == nil && !config.DryRun {
		config.EventRecorder = o.EventRecorder(scheme.Scheme)
	}
	if o.shard != nil {
		// A replica asked to hand an object over must not start
		// reconciling it because of the drain label itself.
		pred := config.UpdatePredicate
		if pred == nil {
			pred = framework.DefaultUpdatePredicate
		}
		drain := o.shard.drainLabel
		config.UpdatePredicate = func(oldObj, newObj any) bool {
			if !hasLabel(oldObj, drain) && hasLabel(newObj, drain) {
				return false
			}
			return pred(oldObj, newObj)
		}
	}
	// A Logger holding a nil pointer is left for framework.New to refuse,
	// naming framework.Config.Logger rather than the CRD client's.
	if config.CRD != nil && config.CRDClient == nil && (config.Logger == nil || !nilptr.Is(config.Logger)) {
		ext, err := apiextensionsclient.NewForConfig(o.restConfig)
		if err != nil {
			return config, fmt.Errorf("apiextensions client: %w", err)
		}
		if config.CRDClient, err = crdclient.New(crdclient.Config{Client: ext, Dynamic: o.dynamic, Logger: config.Logger}); err != nil {
			return config, err
		}
	}
	return config, nil
}

// hasLabel reports whether obj has the label key.
func hasLabel(obj any, key string) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return false
	}
	_, ok := m.GetLabels()[key]
	return ok
}
