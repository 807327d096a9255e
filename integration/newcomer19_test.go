package integration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
)

// TestNewcomerSiteReleases runs three releases of the Site operator
// (newcomer19_operator_test.go) one after the other: release 1 installs the
// CRD at v1alpha1 and three Sites get their Deployments, whose pod templates
// carry the checksum of the ConfigMap each Site names and roll when it
// changes; release 2 adds v1 as the storage version and migrates the stored
// Sites; release 3 drops v1alpha1, which the API server accepts only because
// the migration set status.storedVersions to v1 alone, and writes the Sites'
// status again (which fails while their managedFields name v1alpha1), rolls
// the Deployments again and deletes the Sites.
func TestNewcomerSiteReleases(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	// A CRD of the test's own: a CRD at v1 alone cannot go back to v1alpha1.
	siteGroup := ns + ".newcomer19.example.com"
	kube := kubeClient(t)
	dyn := dynamic.NewForConfigOrDie(env.Config())
	crds := apiextensionsclient.NewForConfigOrDie(env.Config())
	gvr := func(version string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: siteGroup, Version: version, Resource: "sites"}
	}
	names := []string{"a", "b", "c"}

	// run starts a release; the function it returns stops it.
	run := func(release siteRelease) (stop func()) {
		t.Helper()
		config := operatorpkg.Config{Name: siteOperator, RESTConfig: env.Config(), Logger: log.NewNopLogger()}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- runSiteOperator(ctx, config, release, ns) }()
		stopped := false
		stop = func() {
			if stopped {
				return
			}
			stopped = true
			cancel()
			if err := <-done; err != nil {
				t.Errorf("release %v: %v", release.versions, err)
			}
		}
		t.Cleanup(stop)
		return stop
	}
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	// ready waits until every Site is Ready, reconciled by release.
	ready := func(version, release string) {
		t.Helper()
		for _, name := range names {
			eventually(name+" Ready by "+release, func(ctx context.Context) (bool, error) {
				site, err := env.WaitReady(ctx, gvr(version), ns, name)
				if err != nil {
					return false, err
				}
				conditions, _, _ := unstructured.NestedSlice(site.Object, "status", "conditions")
				for _, c := range conditions {
					if c, ok := c.(map[string]any); ok && c["type"] == "Ready" {
						return c["message"] == "reconciled by resource set "+release, nil
					}
				}
				return false, nil
			})
		}
	}
	checksum := func(ctx context.Context, name string) string {
		d, err := kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return d.Spec.Template.Annotations[siteChecksumAn]
	}
	// setConfig writes the shared ConfigMap and waits until every Site's
	// pod template carries a new checksum, the same for all.
	setConfig := func(value string) {
		t.Helper()
		before := checksum(t.Context(), names[0])
		patch := []byte(`{"data":{"greeting":"` + value + `"}}`)
		if _, err := kube.CoreV1().ConfigMaps(ns).Patch(t.Context(), "site-config", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually("the Deployments to roll for "+value, func(ctx context.Context) (bool, error) {
			first := checksum(ctx, names[0])
			for _, name := range names {
				if sum := checksum(ctx, name); sum == "" || sum == before || sum != first {
					return false, nil
				}
			}
			return true, nil
		})
	}

	if _, err := kube.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "site-config"}, Data: map[string]string{"greeting": "hello"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// Release 1: v1alpha1 alone.
	stop := run(siteRelease{name: "release-1", group: siteGroup, versions: []string{"v1alpha1"}})
	eventually("the CRD to be served", func(ctx context.Context) (bool, error) {
		_, err := dyn.Resource(gvr("v1alpha1")).Namespace(ns).List(ctx, metav1.ListOptions{})
		return err == nil, nil
	})
	for _, name := range names {
		site := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": siteGroup + "/v1alpha1", "kind": "Site",
			"metadata": map[string]any{"name": name},
			"spec":     map[string]any{"image": "nginx:1.27", "configMap": "site-config"},
		}}
		if _, err := dyn.Resource(gvr("v1alpha1")).Namespace(ns).Create(t.Context(), site, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ready("v1alpha1", "release-1")
	setConfig("bonjour")
	stop()

	// Release 2: v1 stored, v1alpha1 still served; the Sites are migrated.
	stop = run(siteRelease{name: "release-2", group: siteGroup, versions: []string{"v1alpha1", "v1"}, migrateStorage: true})
	ready("v1", "release-2")
	crd, err := crds.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "sites."+siteGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := crd.Status.StoredVersions; !slices.Equal(got, []string{"v1"}) {
		t.Fatalf("after release 2, status.storedVersions = %v, want [v1]", got)
	}
	stop()

	// Release 3: v1 alone. Its EnsureCRD would fail had the migration not
	// happened; the Sites are still there, read as v1, and still roll.
	stop = run(siteRelease{name: "release-3", group: siteGroup, versions: []string{"v1"}})
	ready("v1", "release-3")
	setConfig("hallo")
	crd, err = crds.ApiextensionsV1().CustomResourceDefinitions().Get(t.Context(), "sites."+siteGroup, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != "v1" {
		t.Fatalf("after release 3, the CRD serves %v, want v1 alone", crd.Spec.Versions)
	}
	// The Sites go with their Deployments, and then the CRD.
	for _, name := range names {
		if err := dyn.Resource(gvr("v1")).Namespace(ns).Delete(t.Context(), name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually("the Sites and Deployments to go", func(ctx context.Context) (bool, error) {
		sites, err := dyn.Resource(gvr("v1")).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		deployments, err := kube.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(sites.Items) == 0 && len(deployments.Items) == 0, err
	})
	stop()
	if err := crds.ApiextensionsV1().CustomResourceDefinitions().Delete(t.Context(), crd.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
