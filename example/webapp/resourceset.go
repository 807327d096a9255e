package webapp

import (
	"errors"
	"fmt"

	"github.com/go-kit/log"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/metrics"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// resourceSets returns the resource sets of the two releases, in the order
// of Releases, and the shared informers of the children they read. Each
// set handles the WebApps whose LabelRelease is its release (release 1
// also those without the label); its resources run in this order:
//
//	release 1: configmap, deployment, service (none: deletes a Service left by release 2)
//	release 2: configmap, deployment (+ pod template annotation), service
//
// Each is a child resource (package child) wrapped by retry (each step
// retried briefly) and metrics (each step timed, retries included).
func resourceSets(config Config, logger log.Logger) ([]*router.ResourceSet, []*operator.SharedInformer, error) {
	op, kube := config.Operator, config.Operator.Kubernetes()
	var caches []*operator.SharedInformer
	var cacheErrs []error
	cache := func(obj runtime.Object, gvr schema.GroupVersionResource) *operator.SharedInformer {
		inf, err := op.Informer(informer.Config{ObjectType: obj, GVR: gvr, Namespace: config.Options.Namespace,
			LabelSelector: LabelManagedBy + "=" + ManagedBy, ResyncPeriod: config.Options.ResyncPeriod})
		caches, cacheErrs = append(caches, inf), append(cacheErrs, err)
		return inf
	}
	configMaps := cache(&corev1.ConfigMap{}, ChildResources[0])
	deployments := cache(&appsv1.Deployment{}, ChildResources[1])
	services := cache(&corev1.Service{}, ChildResources[2])
	if err := errors.Join(cacheErrs...); err != nil {
		return nil, nil, err
	}
	var sets []*router.ResourceSet
	for _, release := range Releases {
		var rs [3]resource.Interface
		var errs [3]error
		rs[0], errs[0] = newChild(config, logger, child.Config[*v1alpha1.WebApp, *corev1.ConfigMap]{Name: ConfigMapName,
			Client: child.Typed(kube.CoreV1().ConfigMaps), Cache: configMaps, Desired: DesiredConfigMap})
		rs[1], errs[1] = newChild(config, logger, child.Config[*v1alpha1.WebApp, *appsv1.Deployment]{Name: DeploymentName,
			Client: child.Typed(kube.AppsV1().Deployments), Cache: deployments, Desired: DesiredDeployment(release)})
		rs[2], errs[2] = newChild(config, logger, child.Config[*v1alpha1.WebApp, *corev1.Service]{Name: ServiceName,
			Client: child.Typed(kube.CoreV1().Services), Cache: services, Desired: DesiredService(release)})
		set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "release-" + release, Handles: router.LabelIs(LabelRelease, release, release == Release1), Logger: logger, Resources: rs[:]})
		if err := errors.Join(errs[0], errs[1], errs[2], err); err != nil {
			return nil, nil, fmt.Errorf("resource set of release %s: %w", release, err)
		}
		sets = append(sets, set)
	}
	return sets, caches, nil
}

// ChildResources are the kinds of a WebApp's children: its ConfigMap,
// Deployment and Service. With --shard each replica caches only those of
// its WebApps (operator.Command.ShardChildren).
var ChildResources = []schema.GroupVersionResource{
	corev1.SchemeGroupVersion.WithResource("configmaps"),
	appsv1.SchemeGroupVersion.WithResource("deployments"),
	corev1.SchemeGroupVersion.WithResource("services"),
}

// newChild returns the child resource c, applying as ManagedBy, told of by
// the Operator's OwnWrites and carrying its WebApp's shard label (when
// sharded), wrapped by retry and metrics.
func newChild[C child.Object](config Config, logger log.Logger, c child.Config[*v1alpha1.WebApp, C]) (resource.Interface, error) {
	c.FieldManager, c.OwnerGVK, c.Writes, c.Logger = ManagedBy, v1alpha1.GroupVersionKind, config.Operator.OwnWrites(), logger
	c.OwnerLabels = config.Operator.ShardLabels()
	r, err := child.New(c)
	if err != nil {
		return nil, err
	}
	rr, err := retry.New(retry.Config{Resource: r, Logger: logger})
	if err != nil {
		return nil, err
	}
	return metrics.New(metrics.Config{Resource: rr, Registerer: config.Operator.Registry()})
}
