package child_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
)

// ExampleNew keeps a ConfigMap per owner. An in-memory client and cache
// stand in for client-go's typed client (child.Typed(kube.CoreV1().ConfigMaps))
// and the operator's shared informer.
func ExampleNew() {
	client := newFakeClient[corev1.ConfigMap]()
	cache := informertest.New()
	content := "hello"
	r, err := child.New(child.Config[*corev1.Secret, *corev1.ConfigMap]{
		Name:         "configmap",
		Client:       client.For,
		Cache:        cache,
		FieldManager: "example-operator",
		Desired: func(_ context.Context, owner *corev1.Secret) (*corev1.ConfigMap, error) {
			return &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: owner.Name},
				Data:       map[string]string{"index.html": content},
			}, nil
		},
	})
	if err != nil {
		panic(err)
	}
	owner := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "web", UID: "1"}}
	ctx := context.Background()

	_ = r.EnsureCreated(ctx, owner)
	_ = cache.Add(client.objs["demo/web"]) // the watch delivers it
	_ = r.EnsureCreated(ctx, owner)        // nothing differs: no write
	fmt.Println("applies:", len(client.applies))

	content = "bye"
	plans, _ := framework.Plan(ctx, owner, []resource.Interface{r})
	for _, p := range plans {
		for _, line := range framework.DescribeChange(p.Update) {
			fmt.Println(line)
		}
	}
	// Output:
	// applies: 1
	// configmap demo/web: data["index.html"] "hello" → "bye"
}
