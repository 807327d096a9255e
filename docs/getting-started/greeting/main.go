// Command greeting is the operator of operatorkit's getting-started guide:
// for every Greeting it keeps a ConfigMap holding the Greeting's message,
// and reports Ready in the Greeting's status.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-kit/log/level"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"example.com/greeting/api/v1alpha1"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// name names the operator: its finalizer, field manager, metrics and Lease.
const name = "greeting-operator"

// greetings is the resource the operator reconciles.
var greetings = v1alpha1.GroupVersion.WithResource("greetings")

func main() {
	opts := operator.Options{LeaderElectionID: name}
	opts.BindFlags(flag.CommandLine) // --kubeconfig, --leader-elect, --metrics-bind-address, --log-level, ...
	flag.Parse()
	if err := opts.Validate(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger, _ := opts.NewLogger(os.Stderr) // Validate checked the level and format
	defer operator.RedirectKlog(logger)()  // client-go's logs in the same format
	restConfig, _, err := opts.RESTConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	config := opts.Config(name, restConfig, logger)
	if config.Sharding != nil { // --shard: the replicas share the Greetings
		config.Sharding.Resources = []schema.GroupVersionResource{greetings}
	}
	if err := run(ctx, config); err != nil {
		level.Error(logger).Log("msg", "operator failed", "err", err)
		os.Exit(1)
	}
}

// run runs the operator until ctx ends.
func run(ctx context.Context, config operator.Config) error {
	op, err := operator.New(config)
	if err != nil {
		return err
	}

	// The caches: every Greeting (decoded once into a *v1alpha1.Greeting),
	// and the ConfigMaps this operator manages.
	greetingCache, err := op.Informer(informer.Config{
		GVR:        greetings,
		ObjectType: &v1alpha1.Greeting{},
	})
	if err != nil {
		return err
	}
	configMapCache, err := op.Informer(informer.Config{
		GVR:           corev1.SchemeGroupVersion.WithResource("configmaps"),
		ObjectType:    &corev1.ConfigMap{},
		LabelSelector: child.LabelManagedBy + "=" + name,
	})
	if err != nil {
		return err
	}

	// The resources, in the order they run: here only the ConfigMap. They
	// form the resource set of this release of the operator, which handles
	// every Greeting.
	configMap, err := newConfigMap(op, configMapCache)
	if err != nil {
		return err
	}
	rtr, err := router.Single("v1", configMap)
	if err != nil {
		return err
	}

	// The Framework reconciles each Greeting, keeps a finalizer on it so
	// that its ConfigMap is deleted with it, and writes its Ready condition.
	// The operator fills in its clients, metrics registry, logger and event
	// recorder, and runs it.
	f, err := op.NewFramework(framework.Config{
		Name:           name,
		Informer:       greetingCache,
		ResourceRouter: rtr,
		Resource:       greetings,
		Conditions:     true,
	})
	if err != nil {
		return err
	}
	// A change to a Greeting's ConfigMap (someone edits or deletes it)
	// reconciles the Greeting again.
	if err := op.Owns(f, v1alpha1.GroupVersion.WithKind("Greeting").GroupKind(), configMapCache); err != nil {
		return err
	}
	return op.Run(ctx)
}
