package router_test

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/router"
)

func ExampleNew() {
	// handlesVersion returns a Handles function for objects labelled
	// operatorkit.example/version=version.
	handlesVersion := func(version string) func(obj any) bool {
		return func(obj any) bool {
			m, ok := obj.(metav1.Object)
			return ok && m.GetLabels()["operatorkit.example/version"] == version
		}
	}
	newSet := func(version string, resourceNames ...string) *router.ResourceSet {
		var resources []resource.Interface
		for _, name := range resourceNames {
			r, err := crud.New(crud.Config{Ops: crudtest.Nop(name)})
			if err != nil {
				panic(err)
			}
			resources = append(resources, r)
		}
		s, err := router.NewResourceSet(router.ResourceSetConfig{
			Name:      version,
			Handles:   handlesVersion(version),
			Resources: resources,
		})
		if err != nil {
			panic(err)
		}
		return s
	}

	r, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{
		newSet("v1", "configmap"),
		newSet("v2", "configmap", "secret"),
	}})
	if err != nil {
		panic(err)
	}

	for _, version := range []string{"v2", "v3"} {
		obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Namespace: "default",
			Name:      "demo",
			Labels:    map[string]string{"operatorkit.example/version": version},
		}}
		set, err := r.ResourceSet(obj)
		if router.IsNoResourceSet(err) {
			fmt.Println(err)
			continue
		}
		fmt.Println(set.Name(), len(set.Resources()), "resources")
	}
	// Output:
	// v2 2 resources
	// no resource set handles *v1.ConfigMap default/demo
}

func ExampleSingle() {
	configMap, err := crud.New(crud.Config{Ops: crudtest.Nop("configmap")})
	if err != nil {
		panic(err)
	}
	// One release: every object is reconciled by the same resources.
	r, err := router.Single("v1", configMap)
	if err != nil {
		panic(err)
	}
	set, _ := r.ResourceSet(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "demo"}})
	fmt.Println(set.Name(), len(set.Resources()), "resource")
	// Output:
	// v1 1 resource
}
