package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// configMapOperator is an Operator of cfg named name, with CacheSyncTimeout
// timeout, whose one Framework reconciles the objects of its informer for
// infCfg (ConfigMaps, with a resource that is never run here).
func configMapOperator(t *testing.T, cfg *rest.Config, name string, timeout time.Duration, infCfg informer.Config) (*operatorpkg.Operator, *framework.Framework) {
	t.Helper()
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: cfg, Name: name, CacheSyncTimeout: timeout, Logger: log.NewNopLogger()})
	if err != nil {
		t.Fatal(err)
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
