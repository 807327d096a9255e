package child_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/resource/child"
)

// TestNewRefusesMetadataOnlyCache: a metadata-only informer holds no
// child's content to compare with the desired one, so New refuses it as
// the Cache, naming the field, rather than the resource applying every
// child in every reconciliation; an informer of whole objects of the same
// resource is fine.
func TestNewRefusesMetadataOnlyCache(t *testing.T) {
	client := newFakeClient[appsv1.Deployment]()
	desired := func(context.Context, *corev1.Secret) (*appsv1.Deployment, error) { return nil, nil }
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	md, err := informer.New(informer.Config{RESTConfig: cfg, GVR: deploymentsGVR, ObjectType: &metav1.PartialObjectMetadata{}})
	if err != nil {
		t.Fatal(err)
	}
	config := child.Config[*corev1.Secret, *appsv1.Deployment]{Name: "x", Client: client.For, Cache: md, Desired: desired}
	_, err = child.New(config)
	if !errors.Is(err, child.ErrInvalidConfig) || !strings.Contains(err.Error(), ".Cache is a metadata-only informer (informer.Config.ObjectType *v1.PartialObjectMetadata)") {
		t.Fatalf("New(a metadata-only Cache) = %v, want ErrInvalidConfig naming Cache", err)
	}
	if ops, err := child.NewOps(config); ops != nil || !errors.Is(err, child.ErrInvalidConfig) {
		t.Fatalf("NewOps(a metadata-only Cache) = %#v, %v; want nil and ErrInvalidConfig", ops, err)
	}
	full, err := informer.New(informer.Config{RESTConfig: cfg, GVR: deploymentsGVR, ObjectType: &appsv1.Deployment{}})
	if err != nil {
		t.Fatal(err)
	}
	config.Cache = full
	if _, err := child.New(config); err != nil {
		t.Fatalf("New(a typed Cache) = %v", err)
	}
}
