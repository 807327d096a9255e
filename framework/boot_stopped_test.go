package framework_test

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/operatorkit/operatorkit/informer"
)

// TestBootAfterItsInformerStoppedWithItsContext: an informer run elsewhere
// (an Operator's shared informer) on the same context may stop, when that
// context ends, before Boot adds its event handler, which the informer then
// refuses. That is the end of ctx, for which Boot's contract is nil, not an
// error.
func TestBootAfterItsInformerStoppedWithItsContext(t *testing.T) {
	gvr := schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "things"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"})
	inf, err := informer.New(informer.Config{Client: dc, GVR: gvr})
	if err != nil {
		t.Fatal(err)
	}
	f := nopFramework(t, "stopped", inf)

	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("informer Run() = %v", err)
	}
	if err := f.Boot(ctx); err != nil {
		t.Errorf("Boot(ended context) after its informer stopped = %v, want nil", err)
	}
}
