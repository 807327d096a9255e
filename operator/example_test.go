package operator_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-kit/log"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// An operator binary binds the usual flags, validates them (one line per
// bad value) and turns them into the Operator's Config.
func ExampleOptions() {
	opts := operator.Options{LeaderElectionID: "webapp-operator"}
	fs := flag.NewFlagSet("webapp-operator", flag.ContinueOnError)
	opts.BindFlags(fs)
	_ = fs.Parse([]string{"--log-format", "yaml", "--kube-api-qps", "0", "--metrics-bind-address", "127.0.0.1:9090"})
	fmt.Println(opts.Validate())

	_ = fs.Parse([]string{"--log-format", "json", "--kube-api-qps", "20"})
	fmt.Println(opts.Validate())
	cfg := opts.Config("webapp-operator", nil, nil)
	fmt.Println(cfg.MetricsAddress, cfg.HealthProbeAddress, cfg.LeaderElection, cfg.LeaderElectionID)
	// Output:
	// invalid value "yaml" for flag --log-format: want logfmt or json
	// invalid value 0 for flag --kube-api-qps: must be positive
	// <nil>
	// 127.0.0.1:9090 :8081 true webapp-operator
}

// The main function of an operator binary: flags, logs, the cluster, one
// Framework over a custom resource with a child watch, and Run until
// SIGTERM. (Compiled, not run: it needs a cluster.)
func Example() {
	opts := operator.Options{LeaderElectionID: "widget-operator"}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	if err := opts.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger, _ := opts.NewLogger(os.Stderr)
	defer operator.RedirectKlog(logger)()
	restConfig, _, err := opts.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	op, err := operator.New(opts.Config("widget-operator", restConfig, logger))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	inf, _ := op.Informer(informer.Config{GVR: widgets})
	set, _ := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: nil /* your resources */})
	rtr, _ := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	f, err := framework.New(framework.Config{
		Name: "widget-operator", Informer: inf, ResourceRouter: rtr,
		Client: op.Dynamic(), Resource: widgets, Registerer: op.Registry(), Logger: logger,
		EventRecorder: op.EventRecorder(scheme.Scheme),
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	_ = op.Add(f)
	configMaps, _ := op.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}})
	_ = op.Owns(f, schema.GroupKind{Group: "example.com", Kind: "Widget"}, configMaps)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := op.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// A binary's whole main is a Command: its name, and a function that adds
// its Framework. A bad flag ends it with one line and exit code 2.
func ExampleCommand() {
	cmd := operator.Command{
		Name:    "widget-operator",
		Summary: "Runs the widget operator until SIGTERM.",
		New: func(op *operator.Operator, fopts operator.FrameworkOptions, logger log.Logger) (*framework.Framework, error) {
			widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
			inf, err := op.Informer(informer.Config{GVR: widgets, Namespace: fopts.Namespace, ResyncPeriod: fopts.ResyncPeriod})
			if err != nil {
				return nil, err
			}
			set, _ := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: nil /* your resources */})
			rtr, _ := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
			return op.NewFramework(framework.Config{Name: "widget-operator", Informer: inf, ResourceRouter: rtr, Resource: widgets,
				Workers: fopts.Workers, ReconcileTimeout: fopts.ReconcileTimeout, DryRun: fopts.DryRun, Logger: logger})
		},
	}
	code := cmd.Run(context.Background(), []string{"--workers", "0"}, os.Stdout, os.Stdout)
	fmt.Println("exit code", code)
	// Output:
	// widget-operator: invalid value 0 for flag --workers: must be at least 1
	// exit code 2
}
