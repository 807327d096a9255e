package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/go-kit/log"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// Backup asks for a CronJob that backs up with the credentials of a Secret
// of its namespace, and a ConfigMap that describes the backup.
type Backup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              BackupSpec `json:"spec"`
	Status            struct {
		ObservedGeneration int64              `json:"observedGeneration,omitempty"`
		Conditions         []metav1.Condition `json:"conditions,omitempty"`
	} `json:"status,omitempty"`
}

// BackupSpec names the Secret and the schedule of a Backup.
type BackupSpec struct {
	SecretName string `json:"secretName"`
	Schedule   string `json:"schedule"`
}

// DeepCopyObject is what controller-gen would write.
func (b *Backup) DeepCopyObject() runtime.Object {
	c := *b
	b.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	c.Status.Conditions = slices.Clone(b.Status.Conditions)
	return &c
}

const (
	backupOperator       = "backup-operator"
	backupSecretChecksum = "backup.example.com/secret-checksum" // on the CronJob's pods: a new Secret rolls them
)

// backupCRD is the Backup CRD in group, with a status subresource and the
// conditions as a map list, as controller-gen writes them.
func backupCRD(group string) *apiextensionsv1.CustomResourceDefinition {
	str, preserve := apiextensionsv1.JSONSchemaProps{Type: "string"}, true
	status := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"observedGeneration": {Type: "integer"},
		"conditions": {Type: "array", XListType: ptr("map"), XListMapKeys: []string{"type"},
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Required: []string{"type", "status"}, XPreserveUnknownFields: &preserve,
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"type": str, "status": str}}}},
	}}
	crd := namespacedCRD(group, "Backup")
	v := &crd.Spec.Versions[0]
	v.Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	v.Schema.OpenAPIV3Schema.Properties = map[string]apiextensionsv1.JSONSchemaProps{"status": status, "spec": {
		Type: "object", Required: []string{"secretName", "schedule"},
		Properties: map[string]apiextensionsv1.JSONSchemaProps{"secretName": str, "schedule": str}}}
	return crd
}

// runBackupOperator runs the Backup operator for namespace ns until the test
// ends, installing the CRD first.
func runBackupOperator(t *testing.T, ns string, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	op, err := operatorpkg.New(operatorpkg.Config{Name: backupOperator, RESTConfig: env.Config(), Logger: log.NewNopLogger()})
	must(t, err)
	inf := func(resource string, obj runtime.Object, selector string) *operatorpkg.SharedInformer {
		i, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource(resource), ObjectType: obj, Namespace: ns, LabelSelector: selector})
		must(t, err)
		return i
	}
	backups, err := op.Informer(informer.Config{GVR: gvr, ObjectType: &Backup{}, Namespace: ns})
	must(t, err)
	secrets := inf("secrets", &corev1.Secret{}, "")
	configMaps := inf("configmaps", &corev1.ConfigMap{}, child.LabelManagedBy+"="+backupOperator)
	cronJobs, err := op.Informer(informer.Config{GVR: batchv1.SchemeGroupVersion.WithResource("cronjobs"), ObjectType: &batchv1.CronJob{},
		Namespace: ns, LabelSelector: child.LabelManagedBy + "=" + backupOperator})
	must(t, err)

	configMap, err := child.New(child.Config[*Backup, *corev1.ConfigMap]{
		Name: "configmap", Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps), Cache: configMaps,
		FieldManager: backupOperator, Writes: op.OwnWrites(),
		Desired: func(_ context.Context, b *Backup) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: b.Name + "-backup"},
				Data: map[string]string{"schedule": b.Spec.Schedule, "secretName": b.Spec.SecretName}}, nil
		},
	})
	must(t, err)
	cronJob, err := child.New(child.Config[*Backup, *batchv1.CronJob]{
		Name: "cronjob", Client: child.Typed(op.Kubernetes().BatchV1().CronJobs), Cache: cronJobs,
		FieldManager: backupOperator, Writes: op.OwnWrites(),
		Desired: func(_ context.Context, b *Backup) (*batchv1.CronJob, error) {
			secret, ok, err := informer.Get[*corev1.Secret](secrets, b.Namespace, b.Spec.SecretName)
			if err != nil {
				return nil, err
			} else if !ok {
				return nil, conditioncontext.WithReason(fmt.Errorf("secret %s not found", b.Spec.SecretName), "SecretNotFound")
			}
			sum, err := child.Checksum(secret) // rolls the pods when the Secret's data changes
			if err != nil {
				return nil, err
			}
			pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{backupSecretChecksum: sum}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{
					Name: "backup", Image: "backup:1", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: b.Spec.SecretName}}}},
				}}}}
			return &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: b.Name}, Spec: batchv1.CronJobSpec{
				Schedule: b.Spec.Schedule, JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: pod}}}}, nil
		},
		// Ready while the last run that was scheduled succeeded; the
		// Backup's Reconciling condition says which run it waits for.
		Readiness: func(c *batchv1.CronJob) (bool, string) {
			s := c.Status
			switch {
			case s.LastScheduleTime == nil:
				return true, "" // no run yet
			case s.LastSuccessfulTime == nil:
				return false, "no successful run yet (last scheduled " + s.LastScheduleTime.UTC().Format(time.RFC3339) + ")"
			case s.LastSuccessfulTime.Before(s.LastScheduleTime):
				return false, "the run scheduled " + s.LastScheduleTime.UTC().Format(time.RFC3339) + " has not succeeded yet"
			}
			return true, ""
		},
		WaitDelay: time.Second,
	})
	must(t, err)
	rtr, err := router.Single("v1", configMap, cronJob)
	must(t, err)
	f, err := op.NewFramework(framework.Config{Name: backupOperator, Informer: backups, ResourceRouter: rtr, Resource: gvr, Conditions: true, CRD: crd})
	must(t, err)
	kind := schema.GroupKind{Group: gvr.Group, Kind: "Backup"}
	must(t, op.Owns(f, kind, configMaps))
	must(t, op.Owns(f, kind, cronJobs))
	// A Backup refers to its Secret: the Secret's events wake it.
	must(t, op.References(f, secrets, func(obj any) []string {
		b := obj.(*Backup)
		return []string{b.Namespace + "/" + b.Spec.SecretName}
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// TestBackupOperator runs an operator of another shape than the guide's:
// a Backup whose CronJob waits for its Secret (Ready False, a Warning
// event), follows a change of the Secret (which it does not own, through
// References), waits for its last run saying why (Readiness), and goes with
// its children.
func TestBackupOperator(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	crd := backupCRD(uniqueCRDGroup(t))
	deleteCRDOnCleanup(t, newCRDClient(t), crd)
	runBackupOperator(t, ns, crd)
	gvr := schema.GroupVersionResource{Group: crd.Spec.Group, Version: "v1", Resource: crd.Spec.Names.Plural}
	kube := kubeClient(t)
	backups := dynamicClientset(t).Resource(gvr).Namespace(ns)
	eventually := func(what string, cond wait.ConditionWithContextFunc) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	condition := func(typ string, status metav1.ConditionStatus, reason string) {
		t.Helper()
		if _, err := env.WaitCondition(t.Context(), gvr, ns, "nightly", typ, status, reason); err != nil {
			t.Fatal(err)
		}
	}
	// The Backup first: its Secret is missing.
	eventually("the Backup CRD", func(ctx context.Context) (bool, error) {
		_, err := backups.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": gvr.GroupVersion().String(), "kind": "Backup", "metadata": map[string]any{"name": "nightly"},
			"spec": map[string]any{"secretName": "db", "schedule": "0 3 * * *"}}}, metav1.CreateOptions{})
		return err == nil, nil
	})
	condition(conditioncontext.Ready, metav1.ConditionFalse, "SecretNotFound")
	eventually("a Warning event", func(ctx context.Context) (bool, error) {
		events, err := kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		return err == nil && slices.ContainsFunc(events.Items, func(e corev1.Event) bool {
			return e.InvolvedObject.Name == "nightly" && e.InvolvedObject.Kind == "Backup" && e.Type == corev1.EventTypeWarning
		}), err
	})

	// The Secret appears, then changes: the CronJob's pods follow it.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "db"}, Data: map[string][]byte{"password": []byte("one")}}
	secret, err := kube.CoreV1().Secrets(ns).Create(t.Context(), secret, metav1.CreateOptions{})
	must(t, err)
	checksumIs := func(s *corev1.Secret) wait.ConditionWithContextFunc {
		sum, err := child.Checksum(s)
		must(t, err)
		return func(ctx context.Context) (bool, error) {
			cj, err := kube.BatchV1().CronJobs(ns).Get(ctx, "nightly", metav1.GetOptions{})
			return err == nil && cj.Spec.JobTemplate.Spec.Template.Annotations[backupSecretChecksum] == sum, nil
		}
	}
	eventually("the CronJob", checksumIs(secret))
	if _, err := env.WaitReady(t.Context(), gvr, ns, "nightly"); err != nil {
		t.Fatal(err)
	}
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(t.Context(), "nightly-backup", metav1.GetOptions{})
	must(t, err)
	if cm.Data["schedule"] != "0 3 * * *" || cm.Data["secretName"] != "db" {
		t.Errorf("ConfigMap data = %v", cm.Data)
	}
	secret.Data["password"] = []byte("two")
	secret, err = kube.CoreV1().Secrets(ns).Update(t.Context(), secret, metav1.UpdateOptions{})
	must(t, err)
	eventually("the CronJob with the new Secret", checksumIs(secret))

	// A run is scheduled (the test plays the CronJob controller): Backup
	// waits for it, and is Ready once it succeeded.
	setStatus := func(status batchv1.CronJobStatus) {
		must(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cj, err := kube.BatchV1().CronJobs(ns).Get(t.Context(), "nightly", metav1.GetOptions{})
			if err == nil {
				cj.Status = status
				_, err = kube.BatchV1().CronJobs(ns).UpdateStatus(t.Context(), cj, metav1.UpdateOptions{})
			}
			return err
		}))
	}
	// The Backup's user reads why in its Reconciling condition (and Ready's).
	messageIs := func(want string) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			u, err := backups.Get(ctx, "nightly", metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			var got []string
			for _, c := range conds {
				c, _ := c.(map[string]any)
				if c["type"] == conditioncontext.Reconciling || c["type"] == conditioncontext.Ready {
					got = append(got, fmt.Sprint(c["message"]))
				}
			}
			return len(got) == 2 && got[0] == want && got[1] == want, nil
		}
	}
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	earlier := metav1.NewTime(now.Add(-24 * time.Hour))
	setStatus(batchv1.CronJobStatus{LastScheduleTime: &now})
	condition(conditioncontext.Reconciling, metav1.ConditionTrue, child.ReasonWaitingForChild)
	eventually("the reason in the conditions", messageIs(fmt.Sprintf("cronjob %s/nightly not ready: no successful run yet (last scheduled %s)", ns, now.UTC().Format(time.RFC3339))))
	setStatus(batchv1.CronJobStatus{LastScheduleTime: &now, LastSuccessfulTime: &earlier})
	eventually("the next reason in the conditions", messageIs(fmt.Sprintf("cronjob %s/nightly not ready: the run scheduled %s has not succeeded yet", ns, now.UTC().Format(time.RFC3339))))
	setStatus(batchv1.CronJobStatus{LastScheduleTime: &now, LastSuccessfulTime: &now})
	condition(conditioncontext.Ready, metav1.ConditionTrue, framework.ReasonSucceeded)

	// The delete: the operator deletes both children, then the Backup goes.
	must(t, backups.Delete(t.Context(), "nightly", metav1.DeleteOptions{}))
	eventually("Backup and children deleted", func(ctx context.Context) (bool, error) {
		_, err1 := backups.Get(ctx, "nightly", metav1.GetOptions{})
		_, err2 := kube.CoreV1().ConfigMaps(ns).Get(ctx, "nightly-backup", metav1.GetOptions{})
		_, err3 := kube.BatchV1().CronJobs(ns).Get(ctx, "nightly", metav1.GetOptions{})
		return apierrors.IsNotFound(err1) && apierrors.IsNotFound(err2) && apierrors.IsNotFound(err3), nil
	})
}
