package integration

// The operator of TestNewcomerSiteReleases, written from the docs alone
// (README.md, docs/getting-started.md, godoc): a Site names a ConfigMap and
// gets a Deployment whose pods roll when that ConfigMap's data changes. Its
// CRD ships at v1alpha1 (release 1), gains v1 as the storage version with a
// storage migration (release 2), and drops v1alpha1 (release 3).

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

const (
	siteOperator   = "site-operator"
	siteChecksumAn = "newcomer19.example.com/config-checksum"
)

// Site asks for a Deployment of Spec.Image whose pods read the ConfigMap
// Spec.ConfigMap. v1alpha1 and v1 have the same schema.
type Site struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              SiteSpec   `json:"spec"`
	Status            SiteStatus `json:"status,omitempty"`
}

// SiteSpec is the desired state of a Site.
type SiteSpec struct {
	Image     string `json:"image"`
	ConfigMap string `json:"configMap"`
}

// SiteStatus is written by the Framework.
type SiteStatus struct {
	ObservedGeneration int64              `json:"observedGeneration,omitempty"`
	Conditions         []metav1.Condition `json:"conditions,omitempty"`
}

// DeepCopyObject implements runtime.Object (controller-gen would write it).
func (s *Site) DeepCopyObject() runtime.Object {
	out := *s
	s.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Status.Conditions = nil
	for _, c := range s.Status.Conditions {
		out.Status.Conditions = append(out.Status.Conditions, *c.DeepCopy())
	}
	return &out
}

// siteCRD is the CRD of a release: the versions it serves, the last one
// stored.
func siteCRD(group string, versions ...string) *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object",
		Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"spec": {Type: "object", Required: []string{"image", "configMap"},
				Properties: map[string]apiextensionsv1.JSONSchemaProps{"image": str, "configMap": str}},
			"status": {Type: "object", XPreserveUnknownFields: ptr19(true)},
		},
	}}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "sites." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sites", Singular: "site", Kind: "Site", ListKind: "SiteList"},
			Scope: apiextensionsv1.NamespaceScoped,
		},
	}
	for i, v := range versions {
		crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{
			Name: v, Served: true, Storage: i == len(versions)-1, Schema: schema,
			Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
		})
	}
	return crd
}

func ptr19[T any](v T) *T { return &v }

// siteRelease describes one release of the operator: its name, its CRD's
// group, the versions it serves (the last is stored and read), and whether it
// migrates storage.
type siteRelease struct {
	name           string
	group          string
	versions       []string
	migrateStorage bool
}

// runSiteOperator runs one release of the operator in namespace ns until ctx
// ends.
func runSiteOperator(ctx context.Context, config operatorpkg.Config, release siteRelease, ns string) error {
	op, err := operatorpkg.New(config)
	if err != nil {
		return err
	}
	sites := schema.GroupVersionResource{Group: release.group, Version: release.versions[len(release.versions)-1], Resource: "sites"}
	siteCache, err := op.Informer(informer.Config{GVR: sites, ObjectType: &Site{}, Namespace: ns})
	if err != nil {
		return err
	}
	deployments, err := op.Informer(informer.Config{
		GVR: appsv1.SchemeGroupVersion.WithResource("deployments"), ObjectType: &appsv1.Deployment{},
		Namespace: ns, LabelSelector: child.LabelManagedBy + "=" + siteOperator,
	})
	if err != nil {
		return err
	}
	// The ConfigMaps Sites name are the users': not label-filtered.
	configMaps, err := op.Informer(informer.Config{
		GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), ObjectType: &corev1.ConfigMap{}, Namespace: ns,
	})
	if err != nil {
		return err
	}
	deployment, err := child.New(child.Config[*Site, *appsv1.Deployment]{
		Name:         "deployment",
		Client:       child.Typed(op.Kubernetes().AppsV1().Deployments),
		Cache:        deployments,
		FieldManager: siteOperator,
		Writes:       op.OwnWrites(),
		Desired: func(_ context.Context, s *Site) (*appsv1.Deployment, error) {
			cm, _, err := informer.Get[*corev1.ConfigMap](configMaps, s.Namespace, s.Spec.ConfigMap)
			if err != nil {
				return nil, err
			}
			sum, err := child.Checksum(cm) // a missing ConfigMap has a digest too
			if err != nil {
				return nil, err
			}
			labels := map[string]string{"site": s.Name}
			return &appsv1.Deployment{
				ObjectMeta: metav1.ObjectMeta{Name: s.Name},
				Spec: appsv1.DeploymentSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{
						ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{siteChecksumAn: sum}},
						Spec: corev1.PodSpec{
							Containers: []corev1.Container{{Name: "site", Image: s.Spec.Image}},
							Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
								ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: s.Spec.ConfigMap}},
							}}},
						},
					},
				},
			}, nil
		},
	})
	if err != nil {
		return err
	}
	rtr, err := router.Single(release.name, deployment)
	if err != nil {
		return err
	}
	f, err := op.NewFramework(framework.Config{
		Name:           siteOperator,
		Informer:       siteCache,
		ResourceRouter: rtr,
		Resource:       sites,
		Conditions:     true,
		CRD:            siteCRD(release.group, release.versions...),
		MigrateStorage: release.migrateStorage,
	})
	if err != nil {
		return err
	}
	siteKind := schema.GroupKind{Group: release.group, Kind: "Site"}
	if err := op.Owns(f, siteKind, deployments); err != nil {
		return err
	}
	// A Site refers to its ConfigMap: a change of it wakes the Site.
	if err := op.References(f, configMaps, func(obj any) []string {
		if s, ok := obj.(*Site); ok {
			return []string{s.Namespace + "/" + s.Spec.ConfigMap}
		}
		return nil
	}); err != nil {
		return err
	}
	return op.Run(ctx)
}
