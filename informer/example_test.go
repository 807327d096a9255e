package informer_test

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic/fake"

	"github.com/operatorkit/operatorkit/informer"
)

func ExampleNew() {
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	w := &unstructured.Unstructured{}
	w.SetAPIVersion("example.com/v1")
	w.SetKind("Widget")
	w.SetNamespace("default")
	w.SetName("w1")
	// In an operator the client comes from dynamic.NewForConfig.
	client := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: "WidgetList"}, w)

	inf, err := informer.New(informer.Config{Client: client, GVR: gvr, DropManagedFields: true})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	obj, exists, _ := inf.Get("default/w1")
	fmt.Println(exists, obj.(*unstructured.Unstructured).GetName())
	cancel()
	fmt.Println(<-done)
	// Output:
	// true w1
	// <nil>
}
