package webapp

import (
	"k8s.io/apimachinery/pkg/api/meta"
)

// Labels and annotations the operator reads or writes.
const (
	// LabelRelease on a WebApp picks the operator release that reconciles
	// it; see [ReleaseOf]. On a release 2 Deployment's pod template it
	// carries "2".
	LabelRelease = "example.operatorkit.io/release"
	// LabelManagedBy is set to [ManagedBy] on every child object. The child
	// informers only watch objects with this label.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// LabelName is set to [AppName] on every child object and pod.
	LabelName = "app.kubernetes.io/name"
	// LabelInstance is set to the WebApp's name on every child object and
	// pod; with LabelName it forms the Deployment's and Service's selector.
	LabelInstance = "app.kubernetes.io/instance"
	// AnnotationService on a release 2 Deployment's pod template names the
	// Service in front of the pods.
	AnnotationService = "example.operatorkit.io/service"

	// ManagedBy is the value of LabelManagedBy, and the field manager of the
	// operator's server-side apply requests.
	ManagedBy = "webapp-operator"
	// AppName is the value of LabelName.
	AppName = "webapp"
)

// The operator releases, as values of LabelRelease.
const (
	// Release1 manages a ConfigMap and a Deployment per WebApp.
	Release1 = "1"
	// Release2 adds a Service, and labels and annotates the Deployment's pod
	// template (a rolling update of the pods).
	Release2 = "2"
)

// Releases lists the releases in order.
var Releases = []string{Release1, Release2}

// ReleaseOf returns the release that reconciles a WebApp with the given
// labels, and true: Release1 when LabelRelease is missing or "1", Release2
// when it is "2". For any other value, including "" and " 2", it returns ""
// and false: no resource set handles the object and the framework reports
// it (router.ErrNoResourceSet). The comparison is exact, so the routing of
// an object never depends on how a value might be normalised.
func ReleaseOf(labels map[string]string) (string, bool) {
	v, ok := labels[LabelRelease]
	switch {
	case !ok, v == Release1:
		return Release1, true
	case v == Release2:
		return Release2, true
	default:
		return "", false
	}
}

// releaseOfObject is ReleaseOf for an object: a *v1alpha1.WebApp, an
// *unstructured.Unstructured or anything else with object metadata.
// Anything without metadata (nil included) has no release.
func releaseOfObject(obj any) (string, bool) {
	m, err := meta.Accessor(obj)
	if err != nil || m == nil {
		return "", false
	}
	return ReleaseOf(m.GetLabels())
}

// Handles returns the Handles function of the resource set of release: it
// reports whether an object routes to release.
func Handles(release string) func(obj any) bool {
	return func(obj any) bool {
		r, ok := releaseOfObject(obj)
		return ok && r == release
	}
}

// childLabels returns the labels of every child object of the WebApp name.
func childLabels(name string) map[string]string {
	return map[string]string{
		LabelManagedBy: ManagedBy,
		LabelName:      AppName,
		LabelInstance:  name,
	}
}

// selectorLabels returns the pod labels that the Deployment and the Service
// of the WebApp name select.
func selectorLabels(name string) map[string]string {
	return map[string]string{
		LabelName:     AppName,
		LabelInstance: name,
	}
}
