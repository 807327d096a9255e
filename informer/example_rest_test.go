package informer_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/informer"
)

// Example_restClient caches typed ConfigMaps read through a clientset's REST
// client, and records the answer of a write with Mutation so that Get shows
// it before the watch does. The API server is a stand-in holding one
// ConfigMap; in an operator the rest.Config comes from a kubeconfig or the
// cluster.
func Example_restClient() {
	srv := httptest.NewServer(http.HandlerFunc(fakeConfigMaps))
	defer srv.Close()
	kube := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})

	inf, err := informer.New(informer.Config{
		RESTClient: kube.CoreV1().RESTClient(), ObjectType: &corev1.ConfigMap{},
		GVR:       corev1.SchemeGroupVersion.WithResource("configmaps"),
		Namespace: "default", ResyncPeriod: -1, DropManagedFields: true,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	obj, _, _ := inf.Get("default/c1")
	fmt.Println(obj.(*corev1.ConfigMap).Data["k"])

	// What an Update returned: a newer version than the cache's.
	inf.Mutation(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "c1", ResourceVersion: "7"},
		Data:       map[string]string{"k": "written"},
	})
	obj, _, _ = inf.Get("default/c1")
	fmt.Println(obj.(*corev1.ConfigMap).Data["k"])

	cancel()
	fmt.Println(<-done)
	// Output:
	// listed
	// written
	// <nil>
}

// Example_typed caches ConfigMaps decoded straight into *corev1.ConfigMap
// from a rest.Config alone: no clientset, no scheme (the path that
// operator.Operator.Informer takes when ObjectType is set). A custom
// resource's Go type works the same way, with no list type or AddToScheme.
// The API server is a stand-in holding one ConfigMap.
func Example_typed() {
	srv := httptest.NewServer(http.HandlerFunc(fakeConfigMaps))
	defer srv.Close()

	inf, err := informer.New(informer.Config{
		RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: &corev1.ConfigMap{},
		GVR:       corev1.SchemeGroupVersion.WithResource("configmaps"),
		Namespace: "default", ResyncPeriod: -1, DropManagedFields: true,
	})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		panic(err)
	}
	obj, _, _ := inf.Get("default/c1")
	cm := obj.(*corev1.ConfigMap)
	fmt.Println(cm.Kind, cm.Name, cm.Data["k"])

	cancel()
	fmt.Println(<-done)
	// Output:
	// ConfigMap c1 listed
	// <nil>
}

const configMapJSON = `{"metadata":{"name":"c1","namespace":"default","resourceVersion":"5"},"data":{"k":"listed"}}`

// fakeConfigMaps answers the list and the watch of the ConfigMaps of
// namespace default with the one ConfigMap c1, in either of the two ways
// client-go may ask for them (a list, or a watch that starts with the
// initial objects), and then keeps the watch open.
func fakeConfigMaps(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	if q.Get("watch") != "true" {
		fmt.Fprintf(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"5"},"items":[%s]}`, configMapJSON)
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", `{"kind":"ConfigMap","apiVersion":"v1",`+configMapJSON[1:])
		fmt.Fprint(w, `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n")
	}
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}
