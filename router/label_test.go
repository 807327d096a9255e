package router

import (
	"errors"
	"strings"
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

func TestLabelIsInvalid(t *testing.T) {
	long := strings.Repeat("a", 64)
	tests := []struct {
		name, key, value string
		want             string // in the panic message
	}{
		{name: "space in key", key: "my label", value: "1", want: `label key "my label"`},
		{name: "empty key", key: "", value: "1", want: `label key ""`},
		{name: "empty prefix", key: "/release", value: "1", want: `label key "/release"`},
		{name: "key too long", key: long, value: "1", want: `label key "` + long + `"`},
		{name: "space in value", key: "release", value: "release 1", want: `label value "release 1"`},
		{name: "padded value", key: "release", value: " 2", want: `label value " 2"`},
		{name: "value too long", key: "release", value: long, want: `label value "` + long + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateLabel(tt.key, tt.value)
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ValidateLabel(%q, %q) = %v, want an error matching ErrInvalidConfig naming %s", tt.key, tt.value, err, tt.want)
			}
			for _, obj := range []*corev1.ConfigMap{
				{},
				{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{tt.key: tt.value}}},
			} {
				for _, orMissing := range []bool{false, true} {
					if LabelIs(tt.key, tt.value, orMissing)(obj) {
						t.Errorf("LabelIs(%q, %q, %v) matched an object labelled %v, want no object", tt.key, tt.value, orMissing, obj.Labels)
					}
				}
			}
		})
	}
	for _, kv := range [][2]string{{"release", ""}, {"example.com/release", "v1.2_3-a"}, {"a", long[:63]}} {
		if err := ValidateLabel(kv[0], kv[1]); err != nil {
			t.Errorf("ValidateLabel(%q, %q) = %v, want nil", kv[0], kv[1], err)
		}
	}
}
