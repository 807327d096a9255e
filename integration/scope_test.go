package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/router"
)

// scopeWait bounds the waits of the scope tests: a wait that the informer
// does not end itself ends with it, and the test fails instead of hanging.
const scopeWait = 10 * time.Second

// waitForInformer runs inf until the test ends and returns how long its
// WaitForCacheSync under a context of scopeWait took, and its error.
func waitForInformer(t *testing.T, inf *informer.Informer) (time.Duration, error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-ran
	})
	start := time.Now()
	waitCtx, stop := context.WithTimeout(ctx, scopeWait)
	defer stop()
	err := inf.WaitForCacheSync(waitCtx)
	return time.Since(start), err
}

// TestInformerEndsItsWaitOnANamespaceForAClusterScopedResource: an
// informer.New informer given a Namespace for a cluster-scoped resource
// (nodes, namespaces, clusterroles), whose list the API server answers
// NotFound as for a resource it does not serve, finds the scope out
// (discovery; lists in all namespaces and in the Namespace with a dynamic
// Client, which has no discovery) and WaitForCacheSync returns at once
// with an error naming the informer, the field and the fix, on every
// client path. Outside the operator package, which checks it before any
// informer starts, it waited for its context and named only the NotFound.
func TestInformerEndsItsWaitOnANamespaceForAClusterScopedResource(t *testing.T) {
	t.Parallel()
	cfg := env.Config()
	kube := kubernetes.NewForConfigOrDie(cfg)
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	clusterRoles := rbacv1.SchemeGroupVersion.WithResource("clusterroles")
	for name, tc := range map[string]struct {
		config informer.Config
		want   string
	}{
		"typed": {
			informer.Config{RESTConfig: cfg, ObjectType: &corev1.Node{}, GVR: nodes},
			`informer nodes: informer cache not synced: invalid config: informer.Config.Namespace is "default", but the API server's discovery shows nodes cluster-scoped`,
		},
		"metadata only": {
			informer.Config{RESTConfig: cfg, ObjectType: &metav1.PartialObjectMetadata{}, GVR: clusterRoles},
			`informer clusterroles: informer cache not synced: invalid config: informer.Config.Namespace is "default", but the API server's discovery shows clusterroles.rbac.authorization.k8s.io cluster-scoped`,
		},
		"REST client": {
			informer.Config{RESTClient: kube.RbacV1().RESTClient(), ObjectType: &rbacv1.ClusterRole{}, GVR: clusterRoles},
			`informer clusterroles: informer cache not synced: invalid config: informer.Config.Namespace is "default", but the API server's discovery shows clusterroles.rbac.authorization.k8s.io cluster-scoped`,
		},
		"dynamic client": {
			informer.Config{Client: dynamicClientset(t), GVR: namespaces},
			`informer namespaces: informer cache not synced: invalid config: informer.Config.Namespace is "default", but the API server lists namespaces in all namespaces and answers NotFound in this one: it is cluster-scoped`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tc.config.Namespace = "default"
			inf, err := informer.New(tc.config)
			if err != nil {
				t.Fatal(err)
			}
			took, err := waitForInformer(t, inf)
			if !errors.Is(err, informer.ErrNotSynced) || !errors.Is(err, informer.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) || !strings.HasSuffix(err.Error(), "leave Namespace empty") {
				t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced and ErrInvalidConfig: %s ... leave Namespace empty", err, tc.want)
			}
			if took >= scopeWait {
				t.Fatalf("WaitForCacheSync took %s, the whole wait: want it ended by the informer", took)
			}
		})
	}
}

// TestInformerWaitsOutANamespacedListOfAResourceNotServed: an informer
// given a Namespace for a resource the API server does not serve (a CRD
// not installed yet) is answered NotFound too, but may still sync once the
// CRD comes: it waits, and the wait's error says that the server does not
// serve the resource (discovery, or the list in all namespaces); it named
// the NotFound alone, which a Namespace for a cluster-scoped resource
// gives too.
func TestInformerWaitsOutANamespacedListOfAResourceNotServed(t *testing.T) {
	t.Parallel()
	gvr := schema.GroupVersionResource{Group: "nothing.example.com", Version: "v1", Resource: "nothings"}
	for name, config := range map[string]informer.Config{
		"typed":          {RESTConfig: env.Config(), ObjectType: &corev1.ConfigMap{}, GVR: gvr},
		"dynamic client": {Client: dynamicClientset(t), GVR: gvr},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			config.Namespace = "default"
			inf, err := informer.New(config)
			if err != nil {
				t.Fatal(err)
			}
			took, err := waitForInformer(t, inf)
			if !errors.Is(err, informer.ErrNotSynced) || errors.Is(err, informer.ErrInvalidConfig) || !errors.Is(err, context.DeadlineExceeded) ||
				!strings.Contains(err.Error(), "(the API server does not serve nothings.nothing.example.com/v1: a CRD not installed yet?)") {
				t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced at the context's end, saying the resource is not served", err)
			}
			if took < scopeWait {
				t.Fatalf("WaitForCacheSync returned after %s, before its context ended", took)
			}
		})
	}
}

// TestBootReturnsOnANamespaceForAClusterScopedResource: a Framework booted
// on its own (no operator package) over an informer given a Namespace for
// a cluster-scoped resource returns from Boot at once, with the informer's
// error naming the field and the fix; Boot waited for its context to end,
// and returned nil then, with nothing said.
func TestBootReturnsOnANamespaceForAClusterScopedResource(t *testing.T) {
	t.Parallel()
	nodes := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	inf, err := informer.New(informer.Config{Client: dynamicClientset(t), GVR: nodes, Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.Single("v1", crudResource(t, newConfigMapOps("configmap-x", "x")))
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: "scope-boot", Informer: inf, ResourceRouter: rt, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), scopeWait)
	defer cancel()
	err = f.Boot(ctx)
	if took := time.Since(start); took >= scopeWait {
		t.Fatalf("Boot() = %v after %s, the whole context: want it ended by the informer", err, took)
	}
	const want = `framework scope-boot: informer nodes: informer cache not synced: invalid config: informer.Config.Namespace is "default", but the API server lists nodes in all namespaces and answers NotFound in this one: it is cluster-scoped`
	if !errors.Is(err, informer.ErrNotSynced) || !errors.Is(err, informer.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Boot() = %v, want ErrNotSynced and ErrInvalidConfig: %s", err, want)
	}
}
