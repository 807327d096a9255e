package requestcount

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// fakeServer answers just enough of the API for the dynamic client: objects
// named "missing" are 404, creates of "taken" are 409, everything else is a
// 200 (201 for creates) with a minimal object or list.
func fakeServer(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		status := func(code int, reason string) {
			w.WriteHeader(code)
			fmt.Fprintf(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":%q,"code":%d}`, reason, code)
		}
		obj := `{"kind":"Widget","apiVersion":"example.com/v1","metadata":{"name":"w","namespace":"ns"}}`
		switch {
		case strings.HasSuffix(r.URL.Path, "/missing"):
			status(http.StatusNotFound, "NotFound")
		case r.URL.Query().Get("watch") == "true":
			w.WriteHeader(http.StatusOK) // an empty watch stream that ends at once
		case r.Method == http.MethodPost:
			body := make([]byte, 4096)
			n, _ := r.Body.Read(body)
			if strings.Contains(string(body[:n]), `"taken"`) {
				status(http.StatusConflict, "AlreadyExists")
				return
			}
			w.WriteHeader(http.StatusCreated)
			fmt.Fprint(w, obj)
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/widgets"):
			fmt.Fprint(w, `{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{},"items":[]}`)
		case r.Method == http.MethodDelete && strings.HasSuffix(r.URL.Path, "/widgets"):
			fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
		default:
			fmt.Fprint(w, obj)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func widget(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("example.com/v1")
	u.SetKind("Widget")
	u.SetName(name)
	return u
}

func TestWrapCountsDynamicClientRequests(t *testing.T) {
	srv := fakeServer(t)
	c := New()
	cfg := &rest.Config{Host: srv.URL}
	wrapped := c.Wrap(cfg)
	if cfg.WrapTransport != nil {
		t.Fatal("Wrap modified its argument")
	}

	client, err := dynamic.NewForConfig(wrapped)
	if err != nil {
		t.Fatal(err)
	}
	ri := client.Resource(widgets).Namespace("ns")
	ctx := context.Background()

	before := c.Snapshot()
	if _, err := ri.Create(ctx, widget("w"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}
	if _, err := ri.Create(ctx, widget("taken"), metav1.CreateOptions{}); !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create taken: err = %v, want AlreadyExists", err)
	}
	if _, err := ri.Get(ctx, "w", metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}
	if _, err := ri.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("get missing: err = %v, want NotFound", err)
	}
	if _, err := ri.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list: %v", err)
	}
	w, err := ri.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	w.Stop()
	if _, err := ri.Update(ctx, widget("w"), metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update: %v", err)
	}
	if _, err := ri.Patch(ctx, "w", "application/merge-patch+json", []byte(`{}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch: %v", err)
	}
	if err := ri.Delete(ctx, "w", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if err := ri.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deletecollection: %v", err)
	}

	got := c.Snapshot().Sub(before)
	wantVerbs := map[string]int64{
		VerbCreate: 2, VerbGet: 2, VerbList: 1, VerbWatch: 1,
		VerbUpdate: 1, VerbPatch: 1, VerbDelete: 1, VerbDeleteCollection: 1,
	}
	if fmt.Sprint(got.ByVerb) != fmt.Sprint(wantVerbs) {
		t.Errorf("ByVerb = %v, want %v", got.ByVerb, wantVerbs)
	}
	wantCodes := map[int]int64{200: 7, 201: 1, 404: 1, 409: 1}
	if fmt.Sprint(got.ByCode) != fmt.Sprint(wantCodes) {
		t.Errorf("ByCode = %v, want %v", got.ByCode, wantCodes)
	}
	if got.Total != 10 || got.Writes != 6 || got.ClientErrors != 2 || got.ServerErrors != 0 {
		t.Errorf("Total, Writes, ClientErrors, ServerErrors = %d, %d, %d, %d; want 10, 6, 2, 0", got.Total, got.Writes, got.ClientErrors, got.ServerErrors)
	}

	// A client built from the unwrapped config does not count.
	plain, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Resource(widgets).Namespace("ns").Get(ctx, "w", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if n := c.Snapshot().Total - before.Total; n != 10 {
		t.Errorf("Total after unwrapped request = %d, want 10", n)
	}
}

func TestWrapComposesWithExistingWrapper(t *testing.T) {
	srv := fakeServer(t)
	var inner atomic.Int64
	cfg := &rest.Config{Host: srv.URL}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			inner.Add(1)
			return rt.RoundTrip(r)
		})
	})
	a, b := New(), New()
	client, err := dynamic.NewForConfig(b.Wrap(a.Wrap(cfg)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Resource(widgets).Namespace("ns").Get(context.Background(), "w", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if inner.Load() != 1 || a.Snapshot().Total != 1 || b.Snapshot().Total != 1 {
		t.Errorf("existing wrapper, a, b counted %d, %d, %d; want 1 each", inner.Load(), a.Snapshot().Total, b.Snapshot().Total)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestTransportErrorCountsAsCodeZero(t *testing.T) {
	c := New()
	rt := &roundTripper{counter: c, next: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return nil, errors.New("connection refused")
	})}
	req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/ns/configmaps", nil)
	if _, err := rt.RoundTrip(req); err == nil {
		t.Fatal("RoundTrip error = nil, want the transport's error")
	}
	s := c.Snapshot()
	if s.ByCode[0] != 1 || s.ByVerb[VerbCreate] != 1 || s.Writes != 1 || s.ClientErrors != 0 {
		t.Errorf("Snapshot = %v, want one create with code 0", s)
	}
	if rt.WrappedRoundTripper() == nil {
		t.Error("WrappedRoundTripper() = nil")
	}
}

func TestCounterConcurrent(t *testing.T) {
	c := New()
	rt := &roundTripper{counter: c, next: roundTripperFunc(func(*http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: http.StatusInternalServerError}, nil
	})}
	const goroutines, each = 8, 200
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
				_, _ = rt.RoundTrip(req)
				_ = c.Snapshot()
			}
		}()
	}
	wg.Wait()
	s := c.Snapshot()
	if s.Total != goroutines*each || s.ByVerb[VerbList] != goroutines*each || s.ServerErrors != goroutines*each {
		t.Errorf("Snapshot = %v, want %d lists with code 500", s, goroutines*each)
	}
}

func TestSnapshotSub(t *testing.T) {
	earlier := Snapshot{
		ByVerb: map[string]int64{VerbGet: 2, VerbList: 1},
		ByCode: map[int]int64{200: 3},
		Total:  3,
	}
	later := Snapshot{
		ByVerb:       map[string]int64{VerbGet: 2, VerbList: 3, VerbCreate: 1},
		ByCode:       map[int]int64{200: 5, 409: 1},
		Total:        6,
		Writes:       1,
		ClientErrors: 1,
	}
	got := later.Sub(earlier)
	want := "total=3 writes=1 clientErrors=1 serverErrors=0 verbs=[create=1 list=2] codes=[200=2 409=1]"
	if got.String() != want {
		t.Errorf("Sub = %s, want %s", got, want)
	}
	if later.ByVerb[VerbGet] != 2 || earlier.ByVerb[VerbList] != 1 {
		t.Error("Sub modified an operand")
	}
	if empty := (Snapshot{}).Sub(Snapshot{}); empty.Total != 0 || len(empty.ByVerb) != 0 {
		t.Errorf("zero Sub zero = %v", empty)
	}
}

func TestCollector(t *testing.T) {
	c := New()
	c.add(verbGet, 200)
	c.add(verbGet, 200)
	c.add(verbCreate, 409)
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c.Collector()); err != nil {
		t.Fatal(err)
	}
	want := `
# HELP operatorkit_client_requests_total Requests sent to the Kubernetes API server, by verb and HTTP status code (0: no response).
# TYPE operatorkit_client_requests_total counter
operatorkit_client_requests_total{code="200",verb="get"} 2
operatorkit_client_requests_total{code="409",verb="create"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}
