package webapp

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(w *v1alpha1.WebApp)
		wantErr string
	}{
		{name: "valid", mutate: func(*v1alpha1.WebApp) {}},
		{name: "registry, port, path, tag", mutate: func(w *v1alpha1.WebApp) { w.Spec.Image = "registry.example.com:5000/team/site:v1.2.3" }},
		{name: "digest", mutate: func(w *v1alpha1.WebApp) { w.Spec.Image = "nginx@sha256:" + strings.Repeat("a", 64) }},
		{name: "empty image", mutate: func(w *v1alpha1.WebApp) { w.Spec.Image = "" }, wantErr: "spec.image must not be empty"},
		{name: "upper-case repository", mutate: func(w *v1alpha1.WebApp) { w.Spec.Image = "Nginx:1.27" }, wantErr: "not a valid image reference"},
		{name: "spaces", mutate: func(w *v1alpha1.WebApp) { w.Spec.Image = "nginx 1.27" }, wantErr: "not a valid image reference"},
		{name: "negative replicas", mutate: func(w *v1alpha1.WebApp) { w.Spec.Replicas = ptr.To(int32(-1)) }, wantErr: "spec.replicas -1"},
		{name: "too many replicas", mutate: func(w *v1alpha1.WebApp) { w.Spec.Replicas = ptr.To(int32(101)) }, wantErr: "spec.replicas 101"},
		{name: "content too large", mutate: func(w *v1alpha1.WebApp) { w.Spec.Content = strings.Repeat("é", MaxContentBytes) }, wantErr: "spec.content has"},
		{name: "name not a service name", mutate: func(w *v1alpha1.WebApp) { w.Name = "1site" }, wantErr: "cannot name a Service"},
		{name: "name too long", mutate: func(w *v1alpha1.WebApp) { w.Name = strings.Repeat("a", 64) }, wantErr: "cannot name a Service"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := testWebApp()
			tt.mutate(w)
			err := Validate(w)
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Validate() = %v, want ErrInvalidSpec containing %q", err, tt.wantErr)
			}
		})
	}
	long := strings.Repeat("é", 100)
	if err := Validate(&v1alpha1.WebApp{Spec: v1alpha1.WebAppSpec{Image: long}}); err == nil || strings.Contains(err.Error(), long) {
		t.Fatalf("Validate(long image) = %v, want the image shortened", err)
	}
	if err := Validate(nil); !errors.Is(err, ErrInvalidSpec) {
		t.Fatalf("Validate(nil) = %v", err)
	}
}
