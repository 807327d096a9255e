package framework_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/router"
)

// TestBootReturnsWhenTheListIsRefusedForGood: an informer whose list the
// API server refuses for good (400 BadRequest: a field selector it does
// not support) can never sync. Boot returns its error at once, and stops
// the informer it ran; it waited for its context to end, and then
// returned nil.
func TestBootReturnsWhenTheListIsRefusedForGood(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "things"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"})
	dc.PrependReactor("list", "things", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewBadRequest(`"spec.foo" is not a known field selector`)
	})
	inf, err := informer.New(informer.Config{Client: dc, GVR: gvr, FieldSelector: "spec.foo=x"})
	if err != nil {
		t.Fatal(err)
	}
	f := nopFramework(t, "refused", inf)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	booted := make(chan error, 1)
	go func() { booted <- f.Boot(ctx) }()
	select {
	case err := <-booted:
		if !errors.Is(err, informer.ErrNotSynced) || !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `framework refused: informer things: informer cache not synced: the API server refuses to list things.g/v1 with field selector "spec.foo=x"`) {
			t.Fatalf("Boot() = %v, want the refused list, naming the resource and the field selector", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Boot did not return within 30 s of a list refused for good")
	}
	// Boot returned before ctx ended: the informer it ran stopped with it
	// (Boot waits for it), and nothing of it is left.
	goleak.VerifyNone(t)
}

// nopFramework returns a Framework named name over inf, without
// finalizers, whose one resource does nothing.
func nopFramework(t *testing.T, name string, inf informer.Interface) *framework.Framework {
	t.Helper()
	r, err := crud.New(crud.Config{Ops: crudtest.Nop("r")})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.Single("v1", r)
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: name, Informer: inf, ResourceRouter: rt, DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	return f
}
