package webapp

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
)

// DeploymentName is the name of the Deployment resource.
const DeploymentName = "deployment"

// ContentPath is where the pods mount the ConfigMap; the container "web"
// serves it on its port "http" (8080).
const ContentPath = "/usr/share/nginx/html"

// DesiredDeployment returns the Desired function of the Deployment in
// release: named like w, spec.replicas (default 1) pods running spec.image
// with the ConfigMap mounted at ContentPath, the pod template labelled
// LabelRelease=release. Release 2 adds AnnotationService, so moving a
// WebApp between releases rolls its pods (and the apply of release 1
// removes the annotation). Its error is Validate's.
func DesiredDeployment(release string) func(context.Context, *v1alpha1.WebApp) (*appsv1.Deployment, error) {
	return func(_ context.Context, w *v1alpha1.WebApp) (*appsv1.Deployment, error) {
		if err := Validate(w); err != nil {
			return nil, err
		}
		pod := metav1.ObjectMeta{Labels: labelsOf(w)}
		pod.Labels[LabelRelease] = release // also in release 1: a key left out would not be drift (package child)
		if release == Release2 {
			pod.Annotations = map[string]string{AnnotationService: w.Name}
		}
		content := corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: w.Name}}}
		return &appsv1.Deployment{ObjectMeta: childMeta(w), Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(ptr.Deref(w.Spec.Replicas, 1)),
			Selector: &metav1.LabelSelector{MatchLabels: labelsOf(w)},
			Template: corev1.PodTemplateSpec{ObjectMeta: pod, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "web", Image: w.Spec.Image,
					Ports:        []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
					VolumeMounts: []corev1.VolumeMount{{Name: "content", MountPath: ContentPath, ReadOnly: true}}}},
				Volumes: []corev1.Volume{{Name: "content", VolumeSource: content}},
			}},
		}}, nil
	}
}
