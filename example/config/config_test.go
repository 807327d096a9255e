package config_test

import (
	"testing"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
)

func TestCRDMatchesTheGoTypes(t *testing.T) {
	crd, err := config.CRD()
	if err != nil {
		t.Fatal(err)
	}
	if crd.Name != v1alpha1.Resource+"."+v1alpha1.Group || crd.Spec.Group != v1alpha1.Group || crd.Spec.Names.Kind != v1alpha1.Kind {
		t.Fatalf("CRD names = %s %s %s", crd.Name, crd.Spec.Group, crd.Spec.Names.Kind)
	}
	if len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != v1alpha1.Version {
		t.Fatalf("CRD versions = %+v", crd.Spec.Versions)
	}
	v := crd.Spec.Versions[0]
	if v.Subresources == nil || v.Subresources.Status == nil {
		t.Fatal("CRD has no status subresource")
	}
	if len(v.AdditionalPrinterColumns) == 0 {
		t.Fatal("CRD has no printer columns")
	}
	spec := v.Schema.OpenAPIV3Schema.Properties["spec"]
	if img := spec.Properties["image"]; img.MinLength == nil || *img.MinLength != 1 {
		t.Fatal("spec.image has no minLength 1")
	}
	if r := spec.Properties["replicas"]; r.Minimum == nil || *r.Minimum != 0 {
		t.Fatal("spec.replicas has no minimum 0")
	}
	again, _ := v1alpha1.CRD()
	again.Name = "changed"
	if c, _ := config.CRD(); c.Name == "changed" {
		t.Fatal("CRD() returns a shared object")
	}
}

func TestClusterRoles(t *testing.T) {
	role, err := config.ClusterRole()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, r := range role.Rules {
		for _, res := range r.Resources {
			seen[res] = true
		}
		for _, v := range r.Verbs {
			if v == "*" {
				t.Fatalf("rule %+v grants every verb", r)
			}
		}
	}
	for _, res := range []string{"webapps", "webapps/status", "configmaps", "services", "deployments", "events", "leases"} {
		if !seen[res] {
			t.Fatalf("role has no rule for %s", res)
		}
	}
	if seen["customresourcedefinitions"] || seen["secrets"] {
		t.Fatal("the operator's role grants CRDs or Secrets")
	}
	crdRole, err := config.CRDInstallerClusterRole()
	if err != nil {
		t.Fatal(err)
	}
	if len(crdRole.Rules) != 1 || crdRole.Rules[0].Resources[0] != "customresourcedefinitions" {
		t.Fatalf("crd installer role = %+v", crdRole.Rules)
	}
	if len(config.CRDYAML()) == 0 {
		t.Fatal("no CRD YAML")
	}
}
