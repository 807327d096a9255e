package integration

import (
	"context"
	"fmt"
	"maps"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/requestcount"
)

func TestRequestCountAgainstAPIServer(t *testing.T) {
	t.Parallel() // counts only the requests of its own client
	ns := newNamespace(t)
	counter := requestcount.New()
	client, err := dynamic.NewForConfig(counter.Wrap(env.Config()))
	if err != nil {
		t.Fatal(err)
	}
	configMaps := client.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
	ctx := t.Context()

	cm := &unstructured.Unstructured{}
	cm.SetAPIVersion("v1")
	cm.SetKind("ConfigMap")
	cm.SetName("counted")

	before := counter.Snapshot()
	if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := configMaps.Create(ctx, cm, metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("second create = %v, want AlreadyExists", err)
	}
	if _, err := configMaps.Get(ctx, "counted", metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}
	if _, err := configMaps.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing = %v, want NotFound", err)
	}
	list, err := configMaps.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	w, err := configMaps.Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	w.Stop()
	if _, err := configMaps.Patch(ctx, "counted", "application/merge-patch+json", []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch: %v", err)
	}
	if err := configMaps.Delete(ctx, "counted", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	got := counter.Snapshot().Sub(before)

	wantVerbs := map[string]int64{
		requestcount.VerbCreate: 2, requestcount.VerbGet: 2, requestcount.VerbList: 1,
		requestcount.VerbWatch: 1, requestcount.VerbPatch: 1, requestcount.VerbDelete: 1,
	}
	if !maps.Equal(got.ByVerb, wantVerbs) {
		t.Errorf("ByVerb = %v, want %v", got.ByVerb, wantVerbs)
	}
	wantCodes := map[int]int64{201: 1, 409: 1, 404: 1, 200: 5}
	if !maps.Equal(got.ByCode, wantCodes) {
		t.Errorf("ByCode = %v, want %v", got.ByCode, wantCodes)
	}
	if got.Total != 8 || got.Writes != 4 || got.ClientErrors != 2 || got.ServerErrors != 0 {
		t.Errorf("snapshot = %v; want total 8, writes 4, clientErrors 2, serverErrors 0", got)
	}
	t.Logf("requests: %v", got)
}

func TestRequestCountInformerMakesNoWrites(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	counter := requestcount.New()
	client, err := dynamic.NewForConfig(counter.Wrap(env.Config()))
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New(informer.Config{
		Client: client, GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespace: ns,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	syncCtx, syncCancel := context.WithTimeout(ctx, pollTimeout)
	defer syncCancel()
	if err := inf.WaitForCacheSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	got := counter.Snapshot()
	// Depending on client-go's WatchListClient feature, the initial list is a
	// list or a watch streaming the initial state; either way the informer
	// only reads.
	if got.Writes != 0 || got.ByVerb[requestcount.VerbList]+got.ByVerb[requestcount.VerbWatch] < 1 || got.Total != got.ByVerb[requestcount.VerbList]+got.ByVerb[requestcount.VerbWatch] {
		t.Errorf("informer start-up requests = %v, want only lists and watches", got)
	}
	t.Logf("informer start-up requests: %s", fmt.Sprint(got))
}
