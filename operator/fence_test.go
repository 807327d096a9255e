package operator

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// recordingServer answers every request with an empty ConfigMap (or Lease)
// and records the method and path of each.
type recordingServer struct {
	mu   sync.Mutex
	seen []string
}

func (s *recordingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.seen = append(s.seen, r.Method+" "+r.URL.Path)
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if strings.Contains(r.URL.Path, "/leases") {
		_, _ = io.WriteString(w, `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l","namespace":"ns"}}`)
		return
	}
	_, _ = io.WriteString(w, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","namespace":"ns"}}`)
}

func (s *recordingServer) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.seen...)
}

// TestFenceRefusesWritesAfterTheLeaseIsLost: once the fence is closed (Run
// does it when the Lease is lost), the writes of every client of the
// Operator's fail unsent with an error matching ErrLeaseLost and are
// counted; reads and the Leases' own writes go on.
func TestFenceRefusesWritesAfterTheLeaseIsLost(t *testing.T) {
	srv := &recordingServer{}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	op, err := New(Config{RESTConfig: &rest.Config{Host: ts.URL}, Name: "op"})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cms := op.Kubernetes().CoreV1().ConfigMaps("ns")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns"}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create before the loss: %v", err)
	}
	if got := srv.requests(); len(got) != 1 || got[0] != "POST /api/v1/namespaces/ns/configmaps" {
		t.Fatalf("requests before the loss = %v", got)
	}

	op.fence.close(errFenced("op", "the leader election Lease ns/op"))

	dyn, err := dynamic.NewForConfig(op.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	writes := map[string]func() error{
		"create": func() error { _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); return err },
		"update": func() error { _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); return err },
		"patch": func() error {
			_, err := cms.Patch(ctx, "c", types.MergePatchType, []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{})
			return err
		},
		"delete": func() error { return cms.Delete(ctx, "c", metav1.DeleteOptions{}) },
		"dynamic delete": func() error {
			return op.Dynamic().Resource(cmGVR).Namespace("ns").Delete(ctx, "c", metav1.DeleteOptions{})
		},
		"metadata patch": func() error {
			_, err := op.Metadata().Resource(cmGVR).Namespace("ns").Patch(ctx, "c", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		},
		"RESTConfig client delete": func() error { return dyn.Resource(cmGVR).Namespace("ns").Delete(ctx, "c", metav1.DeleteOptions{}) },
	}
	for name, write := range writes {
		err := write()
		if !errors.Is(err, ErrLeaseLost) {
			t.Errorf("%s after the loss: error %v, want one matching ErrLeaseLost", name, err)
			continue
		}
		if !strings.Contains(err.Error(), "the leader election Lease ns/op") || !strings.Contains(err.Error(), "not sent") {
			t.Errorf("%s after the loss: error %q does not name the Lease and say that the request was not sent", name, err)
		}
	}
	if got := srv.requests(); len(got) != 1 {
		t.Fatalf("the server saw %v: refused writes reached it", got[1:])
	}
	if got := testutil.ToFloat64(op.fence.refused); got != float64(len(writes)) {
		t.Errorf("refused writes counted %v, want %d", got, len(writes))
	}

	// Reads go on, and so do the Leases' writes.
	if _, err := cms.Get(ctx, "c", metav1.GetOptions{}); err != nil {
		t.Errorf("get after the loss: %v", err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns"}}
	if _, err := op.leases.CoordinationV1().Leases("ns").Update(ctx, lease, metav1.UpdateOptions{}); err != nil {
		t.Errorf("lease update after the loss: %v", err)
	}
	want := []string{"POST /api/v1/namespaces/ns/configmaps", "GET /api/v1/namespaces/ns/configmaps/c", "PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/l"}
	if got := srv.requests(); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("requests = %v, want %v", got, want)
	}
}

// closeRecorder is a request body that records whether it was closed.
type closeRecorder struct {
	io.Reader
	closed bool
}

func (c *closeRecorder) Close() error { c.closed = true; return nil }

// TestFencedTransportClosesTheRefusedBody: a RoundTripper must close the
// request's body even when it fails; the fence does for the writes it
// refuses, and sends the others through.
func TestFencedTransportClosesTheRefusedBody(t *testing.T) {
	f := newFence("op", log.NewNopLogger())
	sent := 0
	rt := f.wrap(roundTripperFunc(func(*http.Request) (*http.Response, error) {
		sent++
		return &http.Response{StatusCode: 200, Body: http.NoBody}, nil
	}))
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		req := httptest.NewRequest(m, "http://x/api/v1/namespaces/ns/configmaps", nil)
		if _, err := rt.RoundTrip(req); err != nil {
			t.Fatalf("%s with the fence open: %v", m, err)
		}
	}
	if sent != 2 {
		t.Fatalf("%d requests sent with the fence open, want 2", sent)
	}
	f.close(errFenced("op", "lease"))
	f.close(errors.New("a second close is ignored"))
	body := &closeRecorder{Reader: strings.NewReader("{}")}
	req := httptest.NewRequest(http.MethodPut, "http://x/api/v1/namespaces/ns/configmaps/c", body)
	req.Body = body
	if _, err := rt.RoundTrip(req); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("PUT with the fence closed: %v, want an error matching ErrLeaseLost", err)
	}
	if !body.closed {
		t.Error("the refused request's body was not closed")
	}
	if _, err := rt.RoundTrip(httptest.NewRequest(http.MethodGet, "http://x/api/v1/namespaces/ns/configmaps/c", nil)); err != nil {
		t.Errorf("GET with the fence closed: %v", err)
	}
	if sent != 3 {
		t.Errorf("%d requests sent, want 3 (the refused PUT not among them)", sent)
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestOperatorMetricsDocumented: the metrics New registers under
// operatorkit_operator_ are in docs/observability.md, and every such name
// there is one.
func TestOperatorMetricsDocumented(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	if _, err := New(Config{RESTConfig: &rest.Config{Host: "http://127.0.0.1:1"}, Name: "op", Registry: reg}); err != nil {
		t.Fatal(err)
	}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, f := range families {
		if strings.HasPrefix(f.GetName(), "operatorkit_operator_") {
			registered[f.GetName()] = true
		}
	}
	if len(registered) == 0 {
		t.Fatal("New registered no operatorkit_operator_ metric")
	}
	data, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, n := range regexp.MustCompile(`operatorkit_operator_[a-z_]+[a-z]`).FindAllString(string(data), -1) {
		documented[n] = true
		if !registered[n] {
			t.Errorf("docs/observability.md names %s, which the Operator does not register", n)
		}
	}
	for n := range registered {
		if !documented[n] {
			t.Errorf("docs/observability.md does not document %s", n)
		}
	}
}
