package operator_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
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
	rtr, _ := router.Single("v1" /* , your resources in order */)
	// The Operator's clients (a metadata client for the finalizer
	// patches), registry, logger and event recorder; added to op.
	f, err := op.NewFramework(framework.Config{Name: "widget-operator", Informer: inf, ResourceRouter: rtr, Resource: widgets})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
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
			rtr, _ := router.Single("v1" /* , your resources in order */)
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

// A handler of your own that calls Framework.Enqueue, here for ConfigMaps
// that name their Widget in a label, gets the filtering of Owns from
// OwnWrites.Filter: resyncs and the echoes of the operator's own writes do
// not wake the Widget. The informer's events are played by hand.
func ExampleOwnWrites_Filter() {
	op, _ := operator.New(operator.Config{RESTConfig: &rest.Config{Host: "https://cluster.example"}, Name: "widget-operator"})
	enqueue := func(key string) { fmt.Println("enqueue", key) } // f.Enqueue of the Widget Framework
	widgetOf := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		cm := obj.(*corev1.ConfigMap)
		return cm.Namespace + "/" + cm.Labels["example.com/widget"]
	}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	h := op.OwnWrites().Filter(configMaps.GroupResource(), cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { enqueue(widgetOf(obj)) },
		UpdateFunc: func(_, obj any) { enqueue(widgetOf(obj)) },
		DeleteFunc: func(obj any) { enqueue(widgetOf(obj)) },
	})
	inf, _ := op.Informer(informer.Config{GVR: configMaps})
	_, _ = inf.AddEventHandler(h)

	version := func(rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "web-config", UID: "1", ResourceVersion: rv,
			Labels: map[string]string{"example.com/widget": "web"}}}
	}
	fmt.Println("a resync:")
	h.OnUpdate(version("7"), version("7"))
	fmt.Println("the operator's own update:")
	done := op.OwnWrites().Begin(configMaps.GroupResource(), "apps", "web-config")
	// ... the update, which the API server answers with version 8 ...
	done(version("8"), nil)
	h.OnUpdate(version("7"), version("8"))
	fmt.Println("someone else's update:")
	h.OnUpdate(version("8"), version("9"))
	fmt.Println("a delete:")
	h.OnDelete(version("9"))
	// Output:
	// a resync:
	// the operator's own update:
	// someone else's update:
	// enqueue apps/web
	// a delete:
	// enqueue apps/web
}

// Sharding spreads the objects of the Widget operator over its replicas:
// the Operator's informer of widgets selects this replica's share by the
// shard label, which the elected replica's assigner writes on each widget
// for its owner on the hash ring. ShardOwner tells where a widget goes.
func ExampleSharding() {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	sharding := &operator.Sharding{Resources: []schema.GroupVersionResource{widgets}, Ring: "widget-operator", Identity: "widget-operator-0"}
	op, err := operator.New(operator.Config{
		RESTConfig: &rest.Config{Host: "https://cluster.example"},
		Name:       "widget-operator",
		Sharding:   sharding,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := op.Informer(informer.Config{GVR: widgets}); err != nil { // selects shard.operatorkit.io/widget-operator=widget-operator-0
		fmt.Println(err)
		return
	}
	// ... op.NewFramework(framework.Config{Informer: inf, ...}); op.Run(ctx)
	fmt.Println("label:", sharding.ShardLabel())
	members := []string{"widget-operator-0", "widget-operator-1", "widget-operator-2"}
	owners := operator.ShardOwner(members, operator.DefaultVirtualNodes, "team-a/web", "team-a/db", "team-b/web")
	for _, key := range []string{"team-a/web", "team-a/db", "team-b/web"} {
		fmt.Println(key, "->", owners[key])
	}
	// Output:
	// label: shard.operatorkit.io/widget-operator
	// team-a/web -> widget-operator-2
	// team-a/db -> widget-operator-0
	// team-b/web -> widget-operator-1
}

// A map function for Watches over Namespaces that names the owners whose
// selector selects a Namespace. Here the owners are ConfigMaps whose
// "selector" key holds a label selector; an operator's owners are its
// custom resources (a SharedConfig's spec.namespaceSelector, through
// metav1.LabelSelectorAsSelector), from the Framework's informer:
//
//	err := op.Watches(f, namespaces, operator.Selecting(sharedConfigs, selectorOf))
func ExampleSelecting() {
	owner := func(name, selector string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"selector": selector}}
	}
	owners := informertest.New(owner("prod-config", "env=prod"), owner("everywhere", "env"), owner("dev-config", "env=dev"))
	selecting := operator.Selecting(owners, func(cm *corev1.ConfigMap) (labels.Selector, error) {
		return labels.Parse(cm.Data["selector"])
	})
	namespace := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"env": "prod"}}}
	fmt.Println(selecting(namespace))
	// Output:
	// [everywhere prod-config]
}
