package webapp

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
)

// ConfigMapName is the name of the ConfigMap resource.
const ConfigMapName = "configmap"

// ContentKey is the ConfigMap key that holds a WebApp's content.
const ContentKey = "index.html"

// DesiredConfigMap returns the ConfigMap the operator keeps for w: named
// like w, labelled, with w's content under ContentKey. Its error is
// Validate's.
func DesiredConfigMap(_ context.Context, w *v1alpha1.WebApp) (*corev1.ConfigMap, error) {
	if err := Validate(w); err != nil {
		return nil, err
	}
	return &corev1.ConfigMap{ObjectMeta: childMeta(w), Data: map[string]string{ContentKey: w.Spec.Content}}, nil
}
