package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/internal/cli"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/operator"
)

const operatorUsage = `usage: webapp-operator [flags]

Runs the WebApp operator until SIGTERM or SIGINT. Flags:`

// operatorFlags are the WebApp operator's own flags; operator.Options has
// the usual ones of every operator binary.
type operatorFlags struct {
	namespace                      string
	installCRD, dryRun             bool
	workers                        int
	resyncPeriod, reconcileTimeout time.Duration
}

func runOperator(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	opts := operator.Options{LeaderElectionID: cmdName, HealthProbeBindAddress: "0"}
	var f operatorFlags
	fs := flag.NewFlagSet(cmdName, flag.ContinueOnError)
	opts.BindFlags(fs)
	fs.StringVar(&f.namespace, "namespace", "", "namespace of the WebApps to reconcile (default: all namespaces)")
	fs.IntVar(&f.workers, "workers", webapp.DefaultWorkers, "number of WebApps reconciled at the same time")
	fs.BoolVar(&f.installCRD, "install-crd", false, "create or update the WebApp CRD at start (needs the rules of config/rbac/crd_installer_role.yaml)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "reconcile and record plans (see /debug/reconciliations) but write nothing")
	fs.DurationVar(&f.resyncPeriod, "resync-period", webapp.DefaultResyncPeriod, "how often every WebApp is reconciled again without a change")
	fs.DurationVar(&f.reconcileTimeout, "reconcile-timeout", webapp.DefaultReconcileTimeout, "upper bound of one reconciliation")
	if err := parse(fs, args, operatorUsage, stdout); errors.Is(err, errHelp) {
		return 0
	} else if err != nil {
		return cli.Fail(stderr, cmdName, 2, err)
	}
	if err := errors.Join(opts.Validate(), f.validate(fs.Args())); err != nil {
		return cli.Fail(stderr, cmdName, 2, err)
	}
	if opts.LeaderElectionNamespace == "" {
		opts.LeaderElectionNamespace = f.namespace // the Lease beside the WebApps
	}
	logger, _ := opts.NewLogger(stderr)
	defer operator.RedirectKlog(logger)()
	if err := operate(ctx, opts, f, logger); err != nil {
		return cli.Fail(stderr, cmdName, 1, err)
	}
	level.Info(logger).Log("msg", "stopped cleanly")
	return 0
}

// operate checks the cluster and the identity's permissions, then runs the
// operator until ctx ends.
func operate(ctx context.Context, opts operator.Options, f operatorFlags, logger log.Logger) error {
	restConfig, _, err := opts.RESTConfig()
	if err != nil {
		return err
	}
	perms := operatorPermissions(f, opts.LeaderElect, opts.LeaderElectionNamespaceOrDefault())
	if err := cli.Check(ctx, restConfig, v1alpha1.GroupVersionResource, f.installCRD, perms); err != nil {
		return err
	}
	op, err := operator.New(opts.Config(cmdName, restConfig, logger))
	if err != nil {
		return err
	}
	var crds apiextensionsclient.Interface
	if f.installCRD {
		if crds, err = apiextensionsclient.NewForConfig(restConfig); err != nil {
			return err
		}
	}
	if _, err := webapp.New(webapp.Config{Operator: op, CRDClient: crds, Namespace: f.namespace, Workers: f.workers,
		ResyncPeriod: f.resyncPeriod, ReconcileTimeout: f.reconcileTimeout, DryRun: f.dryRun, Logger: logger}); err != nil {
		return err
	}
	return op.Run(ctx)
}

func (f operatorFlags) validate(args []string) error {
	switch {
	case len(args) > 0:
		return fmt.Errorf("unexpected argument %q (the only subcommand is plan)", args[0])
	case f.workers < 1:
		return fmt.Errorf("invalid value %d for flag --workers: must be at least 1", f.workers)
	case f.resyncPeriod <= 0:
		return fmt.Errorf("invalid value %s for flag --resync-period: must be positive", f.resyncPeriod)
	case f.reconcileTimeout <= 0:
		return fmt.Errorf("invalid value %s for flag --reconcile-timeout: must be positive", f.reconcileTimeout)
	}
	return nil
}
