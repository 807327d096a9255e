package integration

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// TestReadinessOfAndMetadataOnlyReferences: an operator written from the
// docs alone. Its Backup owns a Deployment checked with child.ReadinessOf
// (the test API server runs no controllers: the Deployment is never ready,
// and the Backup's Reconciling condition says why, in ReadinessOf's
// words), and is woken by its Secret through References of a metadata-only
// informer, which Desired reads too: the Deployment's pods carry the
// Secret's resourceVersion, which changes with its data.
func TestReadinessOfAndMetadataOnlyReferences(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	crd := backupCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	const name = "newcomer"

	op, err := operatorpkg.New(operatorpkg.Config{Name: name, RESTConfig: env.Config(), Logger: log.NewNopLogger()})
	must(t, err)
	backups, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &Backup{}, Namespace: ns})
	must(t, err)
	secrets, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Namespace: ns, ObjectType: &metav1.PartialObjectMetadata{}})
	must(t, err)
	deployments, err := op.Informer(informer.Config{GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), ObjectType: &appsv1.Deployment{},
		Namespace: ns, LabelSelector: child.LabelManagedBy + "=" + name})
	must(t, err)
	deployment, err := child.New(child.Config[*Backup, *appsv1.Deployment]{
		Name: "deployment", Client: child.Typed(op.Kubernetes().AppsV1().Deployments), Cache: deployments,
		FieldManager: name, Writes: op.OwnWrites(), Readiness: child.ReadinessOf[*appsv1.Deployment], WaitDelay: time.Second,
		Desired: func(_ context.Context, b *Backup) (*appsv1.Deployment, error) {
			rv := "none"
			if obj, ok, err := secrets.Get(b.Namespace + "/" + b.Spec.SecretName); err != nil {
				return nil, err
			} else if ok {
				rv = obj.(*metav1.PartialObjectMetadata).ResourceVersion
			}
			labels := map[string]string{"app": b.Name}
			return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"secret-version": rv}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "backup", Image: "backup:1"}}}}}}, nil
		},
	})
	must(t, err)
	rtr, err := router.Single("v1", deployment)
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: name, Informer: backups, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	must(t, op.Owns(f, schema.GroupKind{Group: gvr.Group, Kind: "Backup"}, deployments))
	must(t, op.References(f, secrets, func(obj any) []string {
		b := obj.(*Backup)
		return []string{b.Namespace + "/" + b.Spec.SecretName}
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })

	backupClient := dynamicClientset(t).Resource(gvr).Namespace(ns)
	kube := kubeClient(t)
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	eventually("the Backup created", func(ctx context.Context) (bool, error) {
		_, err := backupClient.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "Backup", "metadata": map[string]any{"name": "nightly"},
			"spec": map[string]any{"secretName": "db", "schedule": "0 3 * * *"}}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	u, err := env.WaitCondition(t.Context(), gvr, ns, "nightly", conditioncontext.Reconciling, metav1.ConditionTrue, child.ReasonWaitingForChild)
	must(t, err)
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var msg string
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == conditioncontext.Reconciling {
			msg, _ = c["message"].(string)
		}
	}
	if want := "deployment " + ns + "/nightly not ready: generation 1 not observed yet (observed 0)"; msg != want {
		t.Errorf("Reconciling message = %q, want %q", msg, want)
	}

	// The Secret comes, then changes: the metadata-only informer wakes the Backup.
	s, err := kube.CoreV1().Secrets(ns).Create(t.Context(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Data: map[string][]byte{"password": []byte("one")}}, metav1.CreateOptions{})
	must(t, err)
	versionIs := func(rv string) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			d, err := kube.AppsV1().Deployments(ns).Get(ctx, "nightly", metav1.GetOptions{})
			return err == nil && d.Spec.Template.Annotations["secret-version"] == rv, nil
		}
	}
	eventually("the Deployment following the new Secret", versionIs(s.ResourceVersion))
	s.Data["password"] = []byte("two")
	s, err = kube.CoreV1().Secrets(ns).Update(t.Context(), s, metav1.UpdateOptions{})
	must(t, err)
	eventually("the Deployment following the changed Secret", versionIs(s.ResourceVersion))

	// The Backup goes (its finalizer with it), so that its CRD can go too.
	must(t, backupClient.Delete(t.Context(), "nightly", metav1.DeleteOptions{}))
	eventually("the Backup and its Deployment deleted", func(ctx context.Context) (bool, error) {
		_, err1 := backupClient.Get(ctx, "nightly", metav1.GetOptions{})
		_, err2 := kube.AppsV1().Deployments(ns).Get(ctx, "nightly", metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2), nil
	})
}

// TestMetadataOnlyMistakesFailFast: a newcomer's mistakes with a
// metadata-only informer fail at once and say why: as a child's Cache
// (child.New), with a FieldSelector the server refuses (Run, within
// seconds of a CacheSyncTimeout of a minute), with a Namespace for a
// cluster-scoped resource (Run).
func TestMetadataOnlyMistakesFailFast(t *testing.T) {
	t.Parallel()
	meta := &metav1.PartialObjectMetadata{}

	t.Run("metadata-only child Cache", func(t *testing.T) {
		op, err := operatorpkg.New(operatorpkg.Config{Name: "mistake-cache", RESTConfig: env.Config(), Logger: log.NewNopLogger()})
		must(t, err)
		cms, err := op.Informer(informer.Config{GVR: configMapGVR, ObjectType: meta, Namespace: "default"})
		must(t, err)
		_, err = child.New(child.Config[*Backup, *corev1.ConfigMap]{
			Name: "configmap", Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps), Cache: cms, FieldManager: "mistake-cache",
			Desired: func(context.Context, *Backup) (*corev1.ConfigMap, error) { return nil, nil },
		})
		if !errors.Is(err, child.ErrInvalidConfig) || !strings.Contains(err.Error(), "Cache") {
			t.Errorf("child.New with a metadata-only Cache = %v, want ErrInvalidConfig naming Cache", err)
		}
	})
	t.Run("bad FieldSelector", func(t *testing.T) {
		op, _ := configMapOperator(t, env.Config(), "mistake-fields", time.Minute,
			informer.Config{GVR: configMapGVR, ObjectType: meta, FieldSelector: "spec.foo=x"})
		err := runResult(t, op, 30*time.Second)
		if !errors.Is(err, informer.ErrNotSynced) || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `field selector "spec.foo=x"`) || !strings.Contains(err.Error(), `"spec.foo" is not a known field selector`) {
			t.Errorf("Run with a metadata-only informer's bad FieldSelector = %v, want ErrNotSynced naming the selector and the server's answer", err)
		}
	})
	t.Run("Namespace for a cluster-scoped resource", func(t *testing.T) {
		op, _ := configMapOperator(t, env.Config(), "mistake-scope", time.Minute,
			informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "nodes"}, Namespace: "default", ObjectType: meta})
		err := runResult(t, op, 30*time.Second)
		if !errors.Is(err, operatorpkg.ErrInvalidConfig) || !strings.Contains(err.Error(), "cluster-scoped") {
			t.Errorf("Run with a metadata-only informer of nodes in default = %v, want ErrInvalidConfig", err)
		}
	})
}
