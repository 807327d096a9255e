package webapp

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/informer"
)

// Children reads the child objects of WebApps: the ConfigMap, Deployment
// and Service named like the WebApp, in its namespace. Each method returns
// nil and no error when the object does not exist. Returned objects may be
// shared with a cache: never modify them. Implementations are safe for
// concurrent use.
type Children interface {
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error)
	Service(ctx context.Context, namespace, name string) (*corev1.Service, error)
}

// NewCachedChildren returns Children that read from the shared informers
// of the operator (see [New]), which list only objects labelled
// LabelManagedBy=ManagedBy and hold typed objects. It makes no API request;
// what it returns is as fresh as the informers (and the writes they were
// told of), which is enough for a level-based operator: a child event
// enqueues its WebApp again.
func NewCachedChildren(configMaps, deployments, services informer.Interface) Children {
	return &cachedChildren{configMaps: configMaps, deployments: deployments, services: services}
}

type cachedChildren struct {
	configMaps, deployments, services informer.Interface
}

func (c *cachedChildren) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return cached[corev1.ConfigMap](c.configMaps, namespace, name)
}

func (c *cachedChildren) Deployment(_ context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return cached[appsv1.Deployment](c.deployments, namespace, name)
}

func (c *cachedChildren) Service(_ context.Context, namespace, name string) (*corev1.Service, error) {
	return cached[corev1.Service](c.services, namespace, name)
}

// cached returns the object namespace/name of inf's cache, nil when there
// is none.
func cached[T any](inf informer.Interface, namespace, name string) (*T, error) {
	obj, ok, err := inf.Get(namespace + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	t, ok := obj.(*T)
	if !ok {
		return nil, fmt.Errorf("read child %s/%s: cache holds a %T", namespace, name, obj)
	}
	return t, nil
}

// NewLiveChildren returns Children that GET every object from the API
// server, as the plan command does (it runs no informers and wants the
// latest state).
func NewLiveChildren(client kubernetes.Interface) Children {
	return &liveChildren{client: client}
}

type liveChildren struct{ client kubernetes.Interface }

func (c *liveChildren) ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	return found(c.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (c *liveChildren) Deployment(ctx context.Context, namespace, name string) (*appsv1.Deployment, error) {
	return found(c.client.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{}))
}

func (c *liveChildren) Service(ctx context.Context, namespace, name string) (*corev1.Service, error) {
	return found(c.client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{}))
}

// found turns a NotFound error into nil, nil. Objects the operator does not
// manage (no LabelManagedBy=ManagedBy) count as found when read live, and
// as missing when read from the filtered cache; the apply step then takes
// them over, as server-side apply with force does.
func found[T any](obj *T, err error) (*T, error) {
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read child: %w", err)
	}
	return obj, nil
}
