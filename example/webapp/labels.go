package webapp

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/resource/child"
)

// Labels and annotations the operator reads or writes.
const (
	// LabelRelease on a WebApp picks the operator release that reconciles
	// it: missing or "1" is Release1, "2" is Release2; any other value
	// (compared exactly: not " 2", not "02") routes the WebApp to no
	// resource set, which the Framework reports (router.ErrNoResourceSet).
	// On a Deployment's pod template it carries the release.
	LabelRelease = "example.operatorkit.io/release"
	// LabelManagedBy is set to [ManagedBy] on every child object (by
	// package child). The child informers only watch objects with this
	// label, and only objects with it are ever deleted.
	LabelManagedBy = child.LabelManagedBy
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

// childMeta returns the metadata of every child object of w: named like w
// and labelled with [labelsOf]. Package child adds the namespace,
// LabelManagedBy and the controller owner reference.
func childMeta(w *v1alpha1.WebApp) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: w.Name, Labels: labelsOf(w)}
}

// labelsOf returns the labels of the children and pods of w, which the
// Deployment and the Service select.
func labelsOf(w *v1alpha1.WebApp) map[string]string {
	return map[string]string{LabelName: AppName, LabelInstance: w.Name}
}
