package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

const (
	// Group is the API group of WebApp.
	Group = "example.operatorkit.io"
	// Version is the API version of the types in this package.
	Version = "v1alpha1"
	// Kind is the kind of a WebApp object.
	Kind = "WebApp"
	// Resource is the plural resource name of WebApp, as in URLs and RBAC rules.
	Resource = "webapps"
)

var (
	// GroupVersion is example.operatorkit.io/v1alpha1.
	GroupVersion = schema.GroupVersion{Group: Group, Version: Version}
	// GroupVersionKind identifies the WebApp kind.
	GroupVersionKind = GroupVersion.WithKind(Kind)
	// GroupVersionResource identifies the webapps resource, for dynamic
	// clients and informers.
	GroupVersionResource = GroupVersion.WithResource(Resource)

	schemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers WebApp and WebAppList with a scheme, as client-go's
	// event recorder needs to make references to WebApps.
	AddToScheme = schemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &WebApp{}, &WebAppList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
