package integration

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

// relistGate holds the informer's reads of one collection: from hold on,
// its open watch streams break and every list or watch of the collection
// waits; release answers the waiting one 410 Gone (its resourceVersion
// expired), which makes the reflector list again, and lets the next ones
// through. What was written meanwhile reaches the cache by that relist, as
// the object's latest version only.
type relistGate struct {
	collection string // URL path suffix, "/widgets"

	mu       sync.Mutex
	held     bool
	released chan struct{}
	streams  map[*gateBody]struct{}
}

func newRelistGate(collection string) *relistGate {
	return &relistGate{collection: collection, released: make(chan struct{}), streams: map[*gateBody]struct{}{}}
}

func (g *relistGate) wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(next http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) { return g.roundTrip(next, req) })
	})
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// hold breaks the open watch streams and holds the next reads until release.
func (g *relistGate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = true
	for b := range g.streams {
		b.broken.Store(true)
		b.ReadCloser.Close()
	}
}

// release answers the held read 410 Gone. It is idempotent.
func (g *relistGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		g.held = false
		close(g.released)
	}
}

func (g *relistGate) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet || !strings.HasSuffix(req.URL.Path, g.collection) {
		return next.RoundTrip(req)
	}
	g.mu.Lock()
	held, released := g.held, g.released
	g.mu.Unlock()
	if held {
		select {
		case <-released:
		case <-req.Context().Done():
			return nil, req.Context().Err()
		}
		body := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version","reason":"Expired","code":410}`
		return &http.Response{StatusCode: http.StatusGone, Status: "410 Gone", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: http.Header{"Content-Type": []string{"application/json"}}, Body: io.NopCloser(strings.NewReader(body)),
			ContentLength: int64(len(body)), Request: req}, nil
	}
	resp, err := next.RoundTrip(req)
	if err != nil || req.URL.Query().Get("watch") != "true" {
		return resp, err
	}
	b := &gateBody{ReadCloser: resp.Body, g: g}
	g.mu.Lock()
	g.streams[b] = struct{}{}
	if g.held {
		b.broken.Store(true)
		b.ReadCloser.Close()
	}
	g.mu.Unlock()
	resp.Body = b
	return resp, nil
}

type gateBody struct {
	io.ReadCloser
	g      *relistGate
	broken atomic.Bool
}

func (b *gateBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if b.broken.Load() {
		return 0, io.ErrUnexpectedEOF
	}
	return n, err
}

func (b *gateBody) Close() error {
	b.g.mu.Lock()
	delete(b.g.streams, b)
	b.g.mu.Unlock()
	return b.ReadCloser.Close()
}

// TestFrameworkOwnWriteSkippedByRelist: the Framework's informer watch
// breaks right before a resource writes the reconciled object; someone else
// writes it once more (same generation); the watch resumes with a relist,
// which shows only the latest version. The Framework's expectation of its
// own write ends with that newer version: the next reconciliation runs, it
// is not deferred as stale until DefaultWriteExpectationTTL.
func TestFrameworkOwnWriteSkippedByRelist(t *testing.T) {
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	gate := newRelistGate("/" + widgetGVR.Resource)
	t.Cleanup(gate.release)
	admin := widgetClient(t, ns)

	var calls atomic.Int64
	var written atomic.Value // the resourceVersion of the resource's write
	// It writes the widget in its first run, as a status write would, the
	// Framework's watch held from right before.
	r := &signalResource{name: "annotate", onCreate: func(ctx context.Context) {
		if calls.Add(1) != 1 {
			return
		}
		gate.hold()
		got, err := admin.Patch(ctx, "w", types.MergePatchType, []byte(`{"metadata":{"annotations":{"written":"by-the-resource"}}}`), metav1.PatchOptions{})
		if err != nil {
			t.Errorf("the resource's write: %v", err)
			return
		}
		written.Store(got.GetResourceVersion())
		resourceversioncontext.SetResourceVersion(ctx, got.GetResourceVersion())
	}}

	dc := dynamicClient(t, gate.wrap(env.Config()))
	reg := prometheus.NewRegistry()
	inf, err := informer.New(informer.Config{Client: dc, GVR: widgetGVR, Namespace: ns, Registerer: reg, ResyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", r)}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: "widgets", Informer: inf, ResourceRouter: rt, Client: dc, Resource: widgetGVR,
		Logger: log.NewNopLogger(), Registerer: reg, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)

	key := ns + "/w"
	createWidget(t, newWidget(ns, "w", "", map[string]string{"a": "1"}))
	poll(t, "the resource's write", func(context.Context) (bool, error) { return written.Load() != nil, nil })
	first := lastTrace(t, f, key, func(tr trace.Trace) bool { return true })
	if first.Result != framework.ResultSuccess {
		t.Fatalf("first reconciliation: %s, want %s", first.Result, framework.ResultSuccess)
	}

	// Someone else writes the widget again (no new generation), while the
	// Framework's watch is held.
	later, err := admin.Patch(t.Context(), "w", types.MergePatchType, []byte(`{"metadata":{"annotations":{"written":"by-someone-else"}}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The API server's watch cache holds it (a list at "0" is served from
	// it), so that the relist shows it, not the resource's write.
	poll(t, "the API server's watch cache at the later write", func(ctx context.Context) (bool, error) {
		l, err := admin.List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err
		}
		return len(l.Items) == 1 && l.Items[0].GetResourceVersion() == later.GetResourceVersion(), nil
	})
	n := len(f.Traces(key))
	gate.release()

	// The relist's update (an annotation changed) wakes the widget: its
	// reconciliation runs at once, the cache showing a version newer than
	// the Framework's own write.
	poll(t, "a reconciliation after the relist", func(context.Context) (bool, error) { return len(f.Traces(key)) > n, nil })
	if got := f.Traces(key)[n]; got.Result != framework.ResultSuccess {
		t.Errorf("the reconciliation after the relist (cache at %s, own write %s): %s, want %s", later.GetResourceVersion(), written.Load(), got.Result, framework.ResultSuccess)
	}
}
