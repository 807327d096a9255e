package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"example.com/greeting/api/v1alpha1"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
)

// newConfigMap returns the resource that keeps one ConfigMap per Greeting:
// named like the Greeting, in its namespace, holding spec.message under the
// key "message". It reads the current ConfigMaps from configMaps, never
// from the API server.
func newConfigMap(op *operator.Operator, configMaps child.Cache) (resource.Interface, error) {
	return child.New(child.Config[*v1alpha1.Greeting, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       child.Typed(op.Kubernetes().CoreV1().ConfigMaps),
		Cache:        configMaps,
		FieldManager: name,
		Writes:       op.OwnWrites(),
		Desired: func(_ context.Context, g *v1alpha1.Greeting) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: g.Name},
				Data:       map[string]string{"message": g.Spec.Message},
			}, nil
		},
	})
}
