package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/testenv"
)

// TestRunCacheSyncTimeoutNamesTheForbiddenList: an identity that may not
// list ConfigMaps never fills their cache. Run still waits CacheSyncTimeout
// (RBAC granted meanwhile would let the cache sync), and its error now
// names the Forbidden list, the reason; it said only that the cache did not
// sync, and asked whether the resource was served and listable.
func TestRunCacheSyncTimeoutNamesTheForbiddenList(t *testing.T) {
	t.Parallel()
	own := testenv.New(t, testenv.Options{RBAC: true})
	cfg, err := own.UserConfig("no-rights")
	if err != nil {
		t.Fatal(err)
	}
	op, _ := configMapOperator(t, cfg, "forbidden", 3*time.Second, informer.Config{GVR: configMapGVR, ObjectType: &corev1.ConfigMap{}})
	err = runResult(t, op, 60*time.Second)
	if !errors.Is(err, informer.ErrNotSynced) || !apierrors.IsForbidden(err) ||
		!strings.Contains(err.Error(), "not synced within CacheSyncTimeout (3s): last list or watch error:") ||
		!strings.Contains(err.Error(), `configmaps is forbidden: User "no-rights" cannot list resource "configmaps"`) {
		t.Fatalf("Run() by an identity that may not list configmaps = %v, want ErrNotSynced after CacheSyncTimeout naming the Forbidden list", err)
	}
}

// TestRunFailsAtOnceOnARefusedFieldSelector: a FieldSelector the API
// server does not support for the resource (spec.foo on ConfigMaps) is
// refused with 400 BadRequest on every list: the cache can never sync.
// Run and Plan return at once with an error naming the informer, the
// selector and the server's message, even behind an informer that is
// still waiting (a resource not served); they waited CacheSyncTimeout,
// here a minute, and named neither.
func TestRunFailsAtOnceOnARefusedFieldSelector(t *testing.T) {
	t.Parallel()
	notServed := schema.GroupVersionResource{Group: "nothing.example.com", Version: "v1", Resource: "nothings"}
	refused := informer.Config{GVR: configMapGVR, ObjectType: &corev1.ConfigMap{}, FieldSelector: "spec.foo=x"}
	const want = `the API server refuses to list configmaps/v1 with field selector "spec.foo=x": failed to list /v1, Resource=configmaps: "spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace"`
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, informer.ErrNotSynced) || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cache of configmaps/v1 fields spec.foo=x: informer configmaps: informer cache not synced: "+want) {
			t.Errorf("%s with a field selector the server refuses = %v, want ErrNotSynced naming the informer, the selector and the server's message", what, err)
		}
	}

	op, _ := configMapOperator(t, env.Config(), "refused-run", time.Minute, refused, notServed)
	check("Run()", runResult(t, op, 30*time.Second))

	op, f := configMapOperator(t, env.Config(), "refused-plan", time.Minute, refused, notServed)
	check("Plan()", planResult(t, op, f, 30*time.Second))
}

// TestRunRefusesANamespaceForAClusterScopedResource: an informer given a
// Namespace for a cluster-scoped resource (nodes) lists in a namespace,
// which the API server answers NotFound, as for a resource it does not
// serve: the cache never syncs. Run and Plan refuse it at once, from the
// server's discovery, naming the informer and the field; they waited
// CacheSyncTimeout, here a minute.
func TestRunRefusesANamespaceForAClusterScopedResource(t *testing.T) {
	t.Parallel()
	nodes := informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Namespace: "default", ObjectType: &corev1.Node{}}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, operatorpkg.ErrInvalidConfig) || !strings.Contains(err.Error(), `informer for nodes/v1 in default: informer.Config.Namespace is "default", but the API server's discovery shows nodes cluster-scoped`) {
			t.Errorf("%s with a Namespace for nodes = %v, want ErrInvalidConfig naming the informer and its Namespace", what, err)
		}
	}

	op, _ := configMapOperator(t, env.Config(), "scope-run", time.Minute, nodes)
	check("Run()", runResult(t, op, 30*time.Second))

	op, f := configMapOperator(t, env.Config(), "scope-plan", time.Minute, nodes)
	check("Plan()", planResult(t, op, f, 30*time.Second))
}

// configMapOperator is an Operator of cfg named name, with CacheSyncTimeout
// timeout, whose one Framework reconciles the objects of its informer for
// infCfg (ConfigMaps, with a resource that is never run here). Informers
// of before, created first, are waited for too.
func configMapOperator(t *testing.T, cfg *rest.Config, name string, timeout time.Duration, infCfg informer.Config, before ...schema.GroupVersionResource) (*operatorpkg.Operator, *framework.Framework) {
	t.Helper()
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: cfg, Name: name, CacheSyncTimeout: timeout, Logger: log.NewNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, gvr := range before {
		if _, err := op.Informer(informer.Config{GVR: gvr}); err != nil {
			t.Fatal(err)
		}
	}
	inf, err := op.Informer(infCfg)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", crudResource(t, newOwnedConfigMapOps("x", op.OwnWrites())))}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: name, Informer: inf, ResourceRouter: rt, Client: op.Dynamic(), Resource: infCfg.GVR, Registerer: op.Registry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := op.Add(f); err != nil {
		t.Fatal(err)
	}
	return op, f
}

// runResult runs op and returns Run's error, failing the test when Run has
// not returned within d.
// planResult returns Plan's error, failing t if Plan does not return
// within d.
func planResult(t *testing.T, op *operatorpkg.Operator, f *framework.Framework, d time.Duration) error {
	t.Helper()
	planned := make(chan error, 1)
	go func() {
		_, err := op.Plan(context.Background(), operatorpkg.PlanConfig{Framework: f})
		planned <- err
	}()
	select {
	case err := <-planned:
		return err
	case <-time.After(d):
		t.Fatalf("Plan did not return within %s", d)
		return nil
	}
}

// runResult returns Run's error, failing t if Run does not return within
// d.
func runResult(t *testing.T, op *operatorpkg.Operator, d time.Duration) error {
	t.Helper()
	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	select {
	case err := <-done:
		return err
	case <-time.After(d):
		t.Fatalf("Run did not return within %s", d)
		return nil
	}
}
