package informer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestConvertTo(t *testing.T) {
	var logs bytes.Buffer
	transform := ConvertTo[*corev1.ConfigMap](log.NewLogfmtLogger(&logs))

	good := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "good"},
		"data":     map[string]any{"k": "secret-value"},
	}}
	got, err := transform(good)
	if err != nil {
		t.Fatal(err)
	}
	cm, ok := got.(*corev1.ConfigMap)
	if !ok || cm.Name != "good" || cm.Data["k"] != "secret-value" || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
		t.Fatalf("transform(good) = %#v, want the typed ConfigMap with its TypeMeta", got)
	}

	bad := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata":   map[string]any{"namespace": "ns", "name": "bad"},
		"data":       map[string]any{"k": 42}, // not a string
		"binaryData": map[string]any{"b": "secret-value"},
	}}
	got, err = transform(bad)
	if err != nil || got != bad {
		t.Fatalf("transform(bad) = %v, %v; want it unchanged and no error", got, err)
	}
	if s := logs.String(); !strings.Contains(s, "level=warn") || !strings.Contains(s, "object=ns/bad") || strings.Contains(s, "secret-value") {
		t.Fatalf("log = %q, want a warning naming ns/bad without the content", s)
	}

	typed := &corev1.Secret{}
	if got, err := transform(typed); err != nil || got != typed {
		t.Fatalf("transform(typed) = %v, %v; want it unchanged", got, err)
	}
	if got, err := ConvertTo[*corev1.ConfigMap](nil)(bad); err != nil || got != bad {
		t.Fatalf("nil logger: transform(bad) = %v, %v", got, err)
	}
}

// TestConvertToNilPointerLogger: a logger holding a nil pointer is no
// logger, as nil is: an object that cannot be converted is left
// unstructured, with nothing logged and no panic.
func TestConvertToNilPointerLogger(t *testing.T) {
	var l *nilPointerLogger
	transform := ConvertTo[*corev1.ConfigMap](l)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "a", "namespace": "ns"},
		"data":     "not a map",
	}}
	got, err := transform(u)
	if err != nil {
		t.Fatal(err)
	}
	if got != u {
		t.Errorf("transform = %T, want the object left unstructured", got)
	}
}

type nilPointerLogger struct{}

func (*nilPointerLogger) Log(...any) error { panic("logged through a nil pointer") }

// TestConvertToLogsNoValue: a value the converter cannot parse (a time
// that is not one) was quoted in its error, and so logged, though
// ConvertTo logs an object's key and the error, never its content. The
// logged error has its quoted values cut out now.
func TestConvertToLogsNoValue(t *testing.T) {
	var logs bytes.Buffer
	transform := ConvertTo[*corev1.ConfigMap](log.NewLogfmtLogger(&logs))
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "ns", "name": "a", "creationTimestamp": "secret-value"},
	}}
	if got, err := transform(u); err != nil || got != u {
		t.Fatalf("transform = %v, %v; want the object left unstructured", got, err)
	}
	if s := logs.String(); !strings.Contains(s, "object=ns/a") || !strings.Contains(s, "parsing time") || strings.Contains(s, "secret-value") {
		t.Fatalf("log = %q, want a warning naming ns/a and the error, without the value", s)
	}
}
