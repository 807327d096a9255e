package operator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
)

// TestEventRecorderNilScheme: EventRecorder(nil) records with client-go's
// scheme; its recorder dropped every Event about a typed object without
// apiVersion and kind (as a clientset's objects come), with a line of
// client-go's log only ("scheme is required to look up gvk").
func TestEventRecorderNilScheme(t *testing.T) {
	var mu sync.Mutex
	var kinds []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/events") {
			http.Error(w, "unexpected", http.StatusMethodNotAllowed)
			return
		}
		var e corev1.Event
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		kinds = append(kinds, e.InvolvedObject.Kind)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(e)
	}))
	defer srv.Close()
	o, err := New(Config{RESTConfig: &rest.Config{Host: srv.URL}, Name: "op"})
	if err != nil {
		t.Fatal(err)
	}
	r := o.EventRecorder(nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := o.startEvents(ctx)
	defer stop()
	r.Event(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a", UID: "u"}}, corev1.EventTypeNormal, "Test", "typed, without kind")
	err = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(kinds) > 0, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if err != nil || kinds[0] != "ConfigMap" {
		t.Fatalf("Events written: involved kinds %q (%v), want one of kind ConfigMap", kinds, err)
	}
}
