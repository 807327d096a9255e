package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
	"github.com/operatorkit/operatorkit/example/internal/cli"
	"github.com/operatorkit/operatorkit/example/webapp"
)

const operatorUsage = `usage: webapp-operator [flags]

Runs the WebApp operator until SIGTERM or SIGINT. Flags:`

type operatorFlags struct {
	commonFlags
	workers          int
	metricsAddress   string
	leaderElect      bool
	leaderElectionNS string
	leaderElectionID string
	installCRD       bool
	dryRun           bool
	resyncPeriod     time.Duration
	reconcileTimeout time.Duration
	leaseDuration    time.Duration
	renewDeadline    time.Duration
	leaseRetryPeriod time.Duration
}

func (f *operatorFlags) validate() error {
	if err := f.commonFlags.validate(); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(f.metricsAddress); err != nil {
		return fmt.Errorf("invalid value %q for flag -metrics-address: want host:port (%s)", f.metricsAddress, err)
	}
	switch {
	case f.workers < 1:
		return fmt.Errorf("invalid value %d for flag -workers: must be at least 1", f.workers)
	case f.resyncPeriod <= 0:
		return fmt.Errorf("invalid value %s for flag -resync-period: must be positive", f.resyncPeriod)
	case f.reconcileTimeout <= 0:
		return fmt.Errorf("invalid value %s for flag -reconcile-timeout: must be positive", f.reconcileTimeout)
	case f.leaderElect && f.leaderElectionID == "":
		return errors.New("flag -leader-election-id must not be empty with -leader-elect")
	case f.leaderElect && f.renewDeadline >= f.leaseDuration:
		return fmt.Errorf("flag -leader-election-renew-deadline (%s) must be shorter than -leader-election-lease-duration (%s)", f.renewDeadline, f.leaseDuration)
	case f.leaderElect && f.leaseRetryPeriod <= 0:
		return fmt.Errorf("invalid value %s for flag -leader-election-retry-period: must be positive", f.leaseRetryPeriod)
	}
	return nil
}

func runOperator(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var f operatorFlags
	fs := flag.NewFlagSet(cmdName, flag.ContinueOnError)
	f.register(fs)
	fs.IntVar(&f.workers, "workers", webapp.DefaultWorkers, "number of WebApps reconciled at the same time")
	fs.StringVar(&f.metricsAddress, "metrics-address", "127.0.0.1:8080", "address serving /metrics, /healthz and /debug/reconciliations (host:port; use 0.0.0.0:8080 to expose it)")
	fs.BoolVar(&f.leaderElect, "leader-elect", true, "run only while holding the leader election Lease, so that replicas never reconcile at the same time")
	fs.StringVar(&f.leaderElectionNS, "leader-election-namespace", "", "namespace of the Lease (default: --namespace, else the pod's namespace, else default)")
	fs.StringVar(&f.leaderElectionID, "leader-election-id", "webapp-operator", "name of the Lease")
	fs.DurationVar(&f.leaseDuration, "leader-election-lease-duration", 15*time.Second, "how long a Lease holds without renewal")
	fs.DurationVar(&f.renewDeadline, "leader-election-renew-deadline", 10*time.Second, "how long the leader tries to renew before it gives up leading")
	fs.DurationVar(&f.leaseRetryPeriod, "leader-election-retry-period", 2*time.Second, "how often candidates try to acquire or renew the Lease")
	fs.BoolVar(&f.installCRD, "install-crd", false, "create or update the WebApp CRD at start (needs the rules of config/rbac/crd_installer_role.yaml)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "reconcile and record plans (see /debug/reconciliations) but write nothing")
	fs.DurationVar(&f.resyncPeriod, "resync-period", webapp.DefaultResyncPeriod, "how often every WebApp is reconciled again without a change")
	fs.DurationVar(&f.reconcileTimeout, "reconcile-timeout", webapp.DefaultReconcileTimeout, "upper bound of one reconciliation")
	if err := parse(fs, args, operatorUsage, stdout); err != nil {
		if errors.Is(err, errHelp) {
			return 0
		}
		return cli.Fail(stderr, cmdName, 2, err)
	}
	if fs.NArg() > 0 {
		return cli.Fail(stderr, cmdName, 2, fmt.Errorf("unexpected argument %q (the only subcommand is plan)", fs.Arg(0)))
	}
	if err := f.validate(); err != nil {
		return cli.Fail(stderr, cmdName, 2, err)
	}
	logger, err := cli.NewLogger(stderr, f.logLevel)
	if err != nil {
		return cli.Fail(stderr, cmdName, 2, err)
	}
	if err := operate(ctx, f, logger); err != nil {
		return cli.Fail(stderr, cmdName, 1, err)
	}
	return 0
}

// operate checks the cluster, then runs the operator (under leader election
// unless disabled) and the metrics server until ctx ends.
func operate(ctx context.Context, f operatorFlags, logger log.Logger) error {
	restConfig, source, err := cli.RESTConfig(f.kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = float32(f.qps), f.burst
	restConfig.UserAgent = cmdName

	leaseNS := f.leaderElectionNS
	if leaseNS == "" {
		leaseNS = f.namespace
	}
	if leaseNS == "" {
		leaseNS = podNamespace()
	}
	if err := cli.Check(ctx, restConfig, v1alpha1.GroupVersionResource, f.installCRD, operatorPermissions(f, leaseNS)); err != nil {
		return err
	}

	srv, err := cli.Listen(f.metricsAddress)
	if err != nil {
		return err
	}
	level.Info(logger).Log("msg", "starting", "cluster", restConfig.Host, "kubeconfig", source, "namespace", f.namespace, "metrics", srv.URL(), "leaderElect", f.leaderElect, "dryRun", f.dryRun)

	kube, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		return err
	}
	var ext apiextensionsclient.Interface
	if f.installCRD {
		if ext, err = apiextensionsclient.NewForConfig(restConfig); err != nil {
			return err
		}
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	op, err := webapp.New(webapp.Config{
		Client:           kube,
		Dynamic:          dyn,
		CRDClient:        ext,
		Namespace:        f.namespace,
		Workers:          f.workers,
		ResyncPeriod:     f.resyncPeriod,
		ReconcileTimeout: f.reconcileTimeout,
		DryRun:           f.dryRun,
		Logger:           logger,
		Registerer:       reg,
	})
	if err != nil {
		return err
	}

	var watchdog *leaderelection.HealthzAdaptor
	if f.leaderElect {
		watchdog = leaderelection.NewLeaderHealthzAdaptor(20 * time.Second)
	}
	srvCtx, stopServer := context.WithCancel(context.WithoutCancel(ctx))
	srvDone := make(chan error, 1)
	go func() {
		srvDone <- srv.Serve(srvCtx, reg, func(r *http.Request) error {
			if watchdog == nil {
				return nil
			}
			return watchdog.Check(r)
		}, op.DebugHandler())
	}()
	defer func() {
		stopServer()
		if err := <-srvDone; err != nil && !errors.Is(err, http.ErrServerClosed) {
			level.Warn(logger).Log("msg", "metrics server stopped", "err", err)
		}
	}()

	if !f.leaderElect {
		err = op.Run(ctx)
	} else {
		err = runElected(ctx, f, leaseNS, kube, op, watchdog, logger)
	}
	if err != nil {
		return err
	}
	level.Info(logger).Log("msg", "stopped cleanly")
	return nil
}

// runElected runs op while this process holds the Lease. On SIGTERM it stops
// op first, waits for its reconciliations in flight, and only then releases
// the Lease, so that two replicas never reconcile at the same time. Losing
// the Lease stops op and is an error.
func runElected(ctx context.Context, f operatorFlags, leaseNS string, kube kubernetes.Interface, op *webapp.Operator, watchdog *leaderelection.HealthzAdaptor, logger log.Logger) error {
	host, _ := os.Hostname()
	identity := host + "_" + uuid.NewString()
	logger = log.With(logger, "lease", leaseNS+"/"+f.leaderElectionID, "identity", identity)

	// The elector's context ends only after op has stopped (or when this
	// process never led), so the Lease is released after the last write.
	leCtx, leCancel := context.WithCancel(context.WithoutCancel(ctx))
	defer leCancel()
	var started atomic.Bool
	opDone := make(chan error, 1)
	stopWaiting := context.AfterFunc(ctx, func() {
		if !started.Load() {
			leCancel()
		}
	})
	defer stopWaiting()

	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: f.leaderElectionID, Namespace: leaseNS},
			Client:     kube.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
		},
		LeaseDuration:   f.leaseDuration,
		RenewDeadline:   f.renewDeadline,
		RetryPeriod:     f.leaseRetryPeriod,
		ReleaseOnCancel: true,
		WatchDog:        watchdog,
		Name:            f.leaderElectionID,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leading context.Context) {
				started.Store(true)
				level.Info(logger).Log("msg", "leading: starting the operator")
				opCtx, cancel := context.WithCancel(leading)
				stop := context.AfterFunc(ctx, cancel)
				err := op.Run(opCtx)
				stop()
				cancel()
				opDone <- err
				leCancel()
			},
			OnStoppedLeading: func() {
				level.Info(logger).Log("msg", "not leading any more")
			},
			OnNewLeader: func(id string) {
				if id != identity {
					level.Info(logger).Log("msg", "another replica leads", "leader", id)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("leader election: %w", err)
	}
	level.Info(logger).Log("msg", "waiting to lead")
	le.Run(leCtx)
	if !started.Load() {
		return nil // stopped before leading
	}
	if err := <-opDone; err != nil {
		return err
	}
	if ctx.Err() == nil {
		return errors.New("lost the leader election Lease; stopped reconciling (a restart campaigns again)")
	}
	return nil
}

// operatorPermissions lists what the operator needs, from the shipped
// ClusterRole: all its rules but the plan command's gets, without writes in
// dry-run mode, the Lease rules in leaseNS and only with leader election,
// and the CRD rules only with --install-crd.
func operatorPermissions(f operatorFlags, leaseNS string) []cli.Permission {
	var perms []cli.Permission
	role, err := config.ClusterRole()
	if err != nil {
		panic(err) // the embedded YAML is tested
	}
	readOnly := map[string]bool{"get": true, "list": true, "watch": true}
	perms = append(perms, cli.PermissionsOf(role.Rules, f.namespace, func(verb, group, _ string) bool {
		switch {
		case group == "coordination.k8s.io":
			return false
		case verb == "get":
			return false // only the plan command gets objects one by one
		case f.dryRun:
			return readOnly[verb]
		}
		return true
	})...)
	if f.leaderElect {
		perms = append(perms, cli.PermissionsOf(role.Rules, leaseNS, func(_, group, _ string) bool { return group == "coordination.k8s.io" })...)
	}
	if f.installCRD {
		crdRole, err := config.CRDInstallerClusterRole()
		if err != nil {
			panic(err)
		}
		perms = append(perms, cli.PermissionsOf(crdRole.Rules, "", nil)...)
	}
	return perms
}

// podNamespace returns the namespace of the pod this process runs in, or
// "default".
func podNamespace() string {
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil || strings.TrimSpace(string(b)) == "" {
		return "default"
	}
	return strings.TrimSpace(string(b))
}
