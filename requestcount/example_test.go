package requestcount_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/requestcount"
)

func ExampleCounter_Wrap() {
	// A stand-in API server that lists nothing.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer srv.Close()

	counter := requestcount.New()
	client, err := dynamic.NewForConfig(counter.Wrap(&rest.Config{Host: srv.URL}))
	if err != nil {
		panic(err)
	}
	before := counter.Snapshot()
	configMaps := client.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"})
	for range 2 {
		if _, err := configMaps.Namespace("default").List(context.Background(), metav1.ListOptions{}); err != nil {
			panic(err)
		}
	}
	fmt.Println(counter.Snapshot().Sub(before))
	// Output: total=2 writes=0 clientErrors=0 serverErrors=0 verbs=[list=2] codes=[200=2]
}
