package integration

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// partialObjectMetadata is what client-go's metadata client asks the API
// server for in the Accept header of each request: the object's metadata
// only (in protobuf, which it prefers, or JSON). The dynamic client asks for
// plain JSON, the whole object.
const partialObjectMetadata = "as=PartialObjectMetadata;g=meta.k8s.io;v=v1"

// sentPatch is a PATCH request seen on the wire, with its answer.
type sentPatch struct {
	path, accept, body string
	code               int
	contentType        string
}

// patchRecorder records the PATCH requests of every client built from a
// rest.Config it wraps.
type patchRecorder struct {
	mu      sync.Mutex
	patches []sentPatch
}

func (r *patchRecorder) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodPatch {
			return next.RoundTrip(req)
		}
		p := sentPatch{path: req.URL.Path, accept: req.Header.Get("Accept")}
		if req.GetBody != nil {
			if body, err := req.GetBody(); err == nil {
				b, _ := io.ReadAll(body)
				p.body = string(b)
			}
		}
		resp, err := next.RoundTrip(req)
		if err == nil {
			p.code, p.contentType = resp.StatusCode, resp.Header.Get("Content-Type")
		}
		r.mu.Lock()
		r.patches = append(r.patches, p)
		r.mu.Unlock()
		return resp, err
	})
}

// to returns the PATCH requests sent to the URL path ending in suffix.
func (r *patchRecorder) to(suffix string) []sentPatch {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []sentPatch
	for _, p := range r.patches {
		if strings.HasSuffix(p.path, suffix) {
			out = append(out, p)
		}
	}
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// TestOperatorNewFrameworkMetadataClient runs a Framework made by
// Operator.NewFramework, given no client, against the API server: the
// finalizer's add and its remove are each patched through a metadata client
// (the request asks for PartialObjectMetadata), not the dynamic client. It
// uses only its own namespace, Operator and rest.Config, and no
// process-global state, so it runs in parallel with other tests; the
// goroutines it starts have stopped when it returns (a LeakCheck running
// meanwhile waits for that).
func TestOperatorNewFrameworkMetadataClient(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	ensureWidgetCRD(t)

	var patches patchRecorder
	cfg := env.Config()
	cfg.Wrap(patches.wrap)
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: cfg, Name: "op-metadata", Logger: log.NewNopLogger()})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", crudResource(t, newConfigMapOps("configmap", "cm")))}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := op.NewFramework(framework.Config{Name: "widgets-metadata", Informer: inf, ResourceRouter: rt, Resource: widgetGVR})
	if err != nil {
		t.Fatal(err)
	}
	stop, done := runOperator(op)
	t.Cleanup(func() { _ = stop() })
	awaitBoot(t, f, done, func() {}) // on failure, the cleanup stops Run

	createWidget(t, newWidget(ns, "w", "", map[string]string{"k": "v"}))
	poll(t, "widget w to carry the finalizer", func(ctx context.Context) (bool, error) {
		w, err := widgetClient(t, ns).Get(ctx, "w", metav1.GetOptions{})
		return err == nil && slices.Contains(w.GetFinalizers(), f.Finalizer()), err
	})
	waitConfigMapData(t, ns, "w-cm", map[string]string{"k": "v"})
	if err := widgetClient(t, ns).Delete(t.Context(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitWidgetGone(t, ns, "w")
	waitConfigMapData(t, ns, "w-cm", nil)
	if err := stop(); err != nil {
		t.Fatalf("Run() = %v, want nil after its context ended", err)
	}

	// Every PATCH of the widget is a finalizer patch: the resource writes
	// only ConfigMaps, and there are no status conditions.
	sent := patches.to("/namespaces/" + ns + "/widgets/w")
	var added, removed bool
	for _, p := range sent {
		t.Logf("PATCH %s: %d %s, Accept %q, body %s", p.path, p.code, p.contentType, p.accept, p.body)
		if !strings.Contains(p.accept, partialObjectMetadata) {
			t.Errorf("finalizer patch %s sent with Accept %q, want a metadata client's (%s)", p.body, p.accept, partialObjectMetadata)
		}
		switch {
		case p.code != http.StatusOK || !strings.Contains(p.body, `"finalizers"`):
		case strings.Contains(p.body, strconv.Quote(f.Finalizer())):
			added = true
		default:
			removed = true
		}
	}
	if !added || !removed {
		t.Errorf("finalizer patches of widget w: added %t, removed %t, want both (%d PATCH requests)", added, removed, len(sent))
	}
}
