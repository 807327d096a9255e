package framework_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/router"
)

// greeter is a minimal resource: it reports each object it ensures.
type greeter struct{ done chan string }

func (g greeter) Name() string { return "greeter" }
func (g greeter) EnsureCreated(ctx context.Context, obj any) error {
	g.done <- "hello " + obj.(*unstructured.Unstructured).GetName()
	return nil
}
func (g greeter) EnsureDeleted(ctx context.Context, obj any) error { return nil }

// ExampleNew wires a Framework: an informer (here the in-memory fake; in an
// operator, informer.New over a dynamic client), a router with one resource
// set, and Boot, which runs the chain for every object until ctx ends.
func ExampleNew() {
	g := greeter{done: make(chan string, 1)}
	rt, err := router.Single("v1", g)
	if err != nil {
		panic(err)
	}
	obj := &unstructured.Unstructured{}
	obj.SetNamespace("default")
	obj.SetName("world")
	f, err := framework.New(framework.Config{
		Name:           "example",
		Informer:       informertest.New(obj),
		ResourceRouter: rt,
		// A real operator sets Client and Resource instead, so that the
		// Framework can write its finalizer.
		DisableFinalizers: true,
	})
	if err != nil {
		panic(err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- f.Boot(ctx) }()
	fmt.Println(<-g.done)
	cancel()
	fmt.Println("boot returned:", <-done)
	// Output:
	// hello world
	// boot returned: <nil>
}
