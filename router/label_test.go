package router

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestLabelIs(t *testing.T) {
	const key = "example.com/release"
	withLabels := func(labels map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: labels}}
	}
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetLabels(map[string]string{key: "2"})
	tests := []struct {
		name      string
		obj       any
		value     string
		orMissing bool
		want      bool
	}{
		{name: "same value", obj: withLabels(map[string]string{key: "2"}), value: "2", want: true},
		{name: "same value, unstructured", obj: u, value: "2", want: true},
		{name: "other value", obj: withLabels(map[string]string{key: "1"}), value: "2"},
		{name: "padded value", obj: withLabels(map[string]string{key: " 2"}), value: "2"},
		{name: "empty value is not missing", obj: withLabels(map[string]string{key: ""}), value: "1", orMissing: true},
		{name: "missing, orMissing", obj: withLabels(nil), value: "1", orMissing: true, want: true},
		{name: "missing", obj: withLabels(map[string]string{"other": "2"}), value: "2"},
		{name: "other value, orMissing", obj: withLabels(map[string]string{key: "2"}), value: "1", orMissing: true},
		{name: "nil", obj: nil, value: "1", orMissing: true},
		{name: "no metadata", obj: "text", value: "1", orMissing: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LabelIs(key, tt.value, tt.orMissing)(tt.obj); got != tt.want {
				t.Fatalf("LabelIs(%q, %q, %v)(%v) = %v, want %v", key, tt.value, tt.orMissing, tt.obj, got, tt.want)
			}
		})
	}
}
