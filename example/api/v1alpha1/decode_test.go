package v1alpha1

import (
	"encoding/json"
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestFromUnstructured(t *testing.T) {
	tests := []struct {
		name    string
		json    string
		wantErr bool
	}{
		{name: "full", json: `{"apiVersion":"example.operatorkit.io/v1alpha1","kind":"WebApp","metadata":{"name":"a","namespace":"n","generation":2},"spec":{"image":"nginx","replicas":3,"content":"x"},"status":{"observedGeneration":2,"conditions":[{"type":"Ready","status":"True","reason":"R","message":"","lastTransitionTime":"2024-01-01T00:00:00Z"}]}}`},
		{name: "no apiVersion and kind", json: `{"metadata":{"name":"a"},"spec":{"image":"nginx"}}`},
		{name: "replicas as string", json: `{"metadata":{"name":"a"},"spec":{"image":"nginx","replicas":"3"}}`, wantErr: true},
		{name: "spec as list", json: `{"metadata":{"name":"a"},"spec":[1,2]}`, wantErr: true},
		{name: "wrong kind", json: `{"apiVersion":"example.operatorkit.io/v1alpha1","kind":"Other","metadata":{"name":"a"}}`, wantErr: true},
		{name: "wrong version", json: `{"apiVersion":"example.operatorkit.io/v2","kind":"WebApp","metadata":{"name":"a"}}`, wantErr: true},
		{name: "bad time", json: `{"metadata":{"name":"a","creationTimestamp":"yesterday"}}`, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m map[string]any
			if err := json.Unmarshal([]byte(tt.json), &m); err != nil {
				t.Fatal(err)
			}
			w, err := FromUnstructured(&unstructured.Unstructured{Object: m})
			if tt.wantErr {
				if !errors.Is(err, ErrDecode) {
					t.Fatalf("FromUnstructured() error = %v, want ErrDecode", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("FromUnstructured() error = %v", err)
			}
			if w.Name != "a" || w.Spec.Image != "nginx" || w.APIVersion != GroupVersion.String() || w.Kind != Kind {
				t.Fatalf("FromUnstructured() = %+v", w)
			}
		})
	}
	if _, err := FromUnstructured(nil); !errors.Is(err, ErrDecode) {
		t.Fatalf("FromUnstructured(nil) error = %v", err)
	}
}

func TestRoundTrip(t *testing.T) {
	n := int32(2)
	in := &WebApp{Spec: WebAppSpec{Image: "nginx", Replicas: &n, Content: "<p>"}}
	in.Name, in.Namespace = "a", "n"
	u, err := ToUnstructured(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := FromUnstructured(u)
	if err != nil {
		t.Fatal(err)
	}
	if out.Spec.Image != "nginx" || *out.Spec.Replicas != 2 || out.Spec.Content != "<p>" || out.Name != "a" {
		t.Fatalf("round trip = %+v", out)
	}
	if in.APIVersion != "" {
		t.Fatal("ToUnstructured modified its argument")
	}
}

// FuzzDecodeWebApp feeds arbitrary JSON documents, as an API server or a
// user could send, through the decoding the operator's informer does:
// it must never panic, and what decodes must encode again.
func FuzzDecodeWebApp(f *testing.F) {
	for _, seed := range []string{
		`{"apiVersion":"example.operatorkit.io/v1alpha1","kind":"WebApp","metadata":{"name":"a"},"spec":{"image":"nginx","replicas":1}}`,
		`{"metadata":{"name":"a","labels":{"x":1}},"spec":{"image":7}}`,
		`{"metadata":{"name":"a","ownerReferences":[{"uid":{}}]},"status":{"conditions":[{"type":null}]}}`,
		`{"spec":{"replicas":1e40}}`,
		`{"spec":{"replicas":-1.5}}`,
		`{"metadata":{"creationTimestamp":[]}}`,
		`{"status":{"conditions":"ready"}}`,
		`{"kind":5}`,
		`{}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil || m == nil {
			return
		}
		u := &unstructured.Unstructured{Object: m}
		w, err := FromUnstructured(u)
		if err != nil {
			if !errors.Is(err, ErrDecode) {
				t.Fatalf("error does not wrap ErrDecode: %v", err)
			}
			return
		}
		if w.DeepCopy() == nil {
			t.Fatal("DeepCopy of a decoded WebApp is nil")
		}
		if _, err := ToUnstructured(w); err != nil {
			t.Fatalf("a decoded WebApp does not encode: %v", err)
		}
	})
}
