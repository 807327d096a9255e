package webapp

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
)

// ServiceName is the name of the Service resource.
const ServiceName = "service"

// DesiredService returns the Desired function of the Service in release:
// in release 2 a ClusterIP Service named like w, selecting w's pods, port
// 80 to their port "http"; in release 1 none, so that a Service left by
// release 2 (a WebApp moved back) is deleted. Its error is Validate's.
func DesiredService(release string) func(context.Context, *v1alpha1.WebApp) (*corev1.Service, error) {
	return func(_ context.Context, w *v1alpha1.WebApp) (*corev1.Service, error) {
		if err := Validate(w); err != nil || release != Release2 {
			return nil, err
		}
		return &corev1.Service{ObjectMeta: childMeta(w), Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: labelsOf(w),
			Ports:    []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http"), Protocol: corev1.ProtocolTCP}},
		}}, nil
	}
}
