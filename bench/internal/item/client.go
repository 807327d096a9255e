package item

import (
	"context"
	"fmt"

	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/crdclient"
)

// NewClient returns a REST client for the Item API that decodes straight
// into *Item and *List (JSON, no unstructured step).
func NewClient(cfg *rest.Config) (rest.Interface, error) {
	scheme := runtime.NewScheme()
	if err := AddToScheme(scheme); err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &GroupVersion
	c.APIPath = "/apis"
	c.NegotiatedSerializer = serializer.NewCodecFactory(scheme).WithoutConversion()
	c.ContentType = runtime.ContentTypeJSON
	client, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("item client: %w", err)
	}
	return client, nil
}

// InstallCRD creates the Item CRD through cfg, or updates it to CRD(), and
// waits until the API server serves it (crdclient.Client.EnsureCreated).
func InstallCRD(ctx context.Context, cfg *rest.Config) error {
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds, err := crdclient.New(crdclient.Config{Client: ext})
	if err != nil {
		return err
	}
	if err := crds.EnsureCreated(ctx, CRD(), nil); err != nil {
		return fmt.Errorf("install the Item CRD: %w", err)
	}
	return nil
}
