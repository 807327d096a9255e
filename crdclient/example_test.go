package crdclient_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cenkalti/backoff/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/crdclient"
)

// widgetCRD is the CRD of the namespaced kind Widget in example.com/v1, with
// a status subresource and a schema that keeps any spec and status.
func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	anyObject := apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: new(true)}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type:       "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": anyObject, "status": anyObject},
				}},
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
			}},
		},
	}
}

// newCRDClient returns a CRDClient for the cluster the process runs in.
func newCRDClient() (*crdclient.CRDClient, error) {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		return nil, err
	}
	ext, err := apiextensionsclient.NewForConfig(restConfig)
	if err != nil {
		return nil, err
	}
	return crdclient.New(crdclient.Config{Client: ext})
}

// EnsureCreated installs or updates the Widget CRD at start-up and returns
// once widgets are served, so that an informer of widgets can start. It
// needs an API server, so it is compiled but not run. (A Framework whose
// Config.CRD is set does this in Boot.)
func ExampleCRDClient_EnsureCreated() {
	crds, err := newCRDClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	err = crds.EnsureCreated(ctx, widgetCRD(), nil) // nil: crdclient.NewDefaultBackOff()
	cancel()
	switch {
	case errors.Is(err, crdclient.ErrInvalidCRD), errors.Is(err, crdclient.ErrCRDNotAccepted):
		// The CRD is wrong, or its names clash with another CRD's:
		// retrying does not help, the CRD needs a fix.
		fmt.Fprintln(os.Stderr, "fix the CRD:", err)
		os.Exit(1)
	case err != nil:
		// ErrTimeout, the context's end, or an API error such as forbidden.
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// ... start the informers and the Framework of widgets ...
}

// EnsureDeleted uninstalls the Widget CRD, and with it every widget, and
// waits until it is gone, here polling every second for at most a minute.
// It needs an API server, so it is compiled but not run.
func ExampleCRDClient_EnsureDeleted() {
	crds, err := newCRDClient()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	b := backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Second), 60)
	err = crds.EnsureDeleted(context.Background(), widgetCRD(), b)
	switch {
	case errors.Is(err, crdclient.ErrTimeout):
		// The message says what was last seen: usually the CRD's cleanup
		// finalizer, held up by widgets whose finalizers no operator
		// removes any more.
		fmt.Fprintln(os.Stderr, "CRD still there:", err)
		os.Exit(1)
	case err != nil:
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("widgets.example.com deleted")
}

// MigrateStorage, in the main of the release that made v1 the storage
// version of widgets (v1alpha1 was before, and is still served), after
// EnsureCreated installed that spec: it rewrites every widget stored in
// v1alpha1 once, so that a later release may drop v1alpha1. Later starts
// find status.storedVersions [v1] and write nothing. (A Framework with
// Config.CRD and Config.MigrateStorage does this in EnsureCRD.) It needs an
// API server, so it is compiled but not run.
func ExampleCRDClient_MigrateStorage() {
	restConfig, err := rest.InClusterConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ext, err := apiextensionsclient.NewForConfig(restConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	dyn, err := dynamic.NewForConfig(restConfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	crds, err := crdclient.New(crdclient.Config{Client: ext, Dynamic: dyn})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx := context.Background()
	if err := crds.EnsureCreated(ctx, widgetCRD(), nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	m, err := crds.MigrateStorage(ctx, widgetCRD(), nil)
	switch {
	case errors.Is(err, crdclient.ErrStorageVersionChanged):
		// Someone changed the CRD meanwhile: run it again once it is stable.
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	case err != nil:
		// ErrTimeout, the context's end, or an API error naming the CRD and
		// the object (the objects written so far stay written).
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%d widgets rewritten in %s (stored versions were %v)\n", m.Rewritten, m.StorageVersion, m.StoredVersions)
}
