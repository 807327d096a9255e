package informer

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
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"

	"github.com/operatorkit/operatorkit/internal/scope"
)

var nodes = corev1.SchemeGroupVersion.WithResource("nodes")

// notFoundServer is a stand-in API server that answers every list and
// watch NotFound, as the API server answers those of a namespace for a
// cluster-scoped resource or those of a resource it does not serve; and
// the discovery of the core group version, v1, with nodes cluster-scoped
// (any other group version: NotFound). It counts the discovery requests.
type notFoundServer struct {
	*httptest.Server
	discovery atomic.Int32
}

func newNotFoundServer(t *testing.T) *notFoundServer {
	s := &notFoundServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/api/v1" {
			s.discovery.Add(1)
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[{"name":"nodes","singularName":"node","namespaced":false,"kind":"Node","verbs":["list","watch"]},{"name":"nodes/status","singularName":"","namespaced":false,"kind":"Node","verbs":["get"]}]}`)
			return
		}
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// runAndWait runs inf until the test ends and returns its
// WaitForCacheSync's error under a context that ends after d.
func runAndWait(t *testing.T, inf *Informer, d time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-ran
	})
	waitCtx, stop := context.WithTimeoutCause(ctx, d, errors.New("test's wait over"))
	defer stop()
	return inf.WaitForCacheSync(waitCtx)
}

// namespacedLists is a fake dynamic client whose lists in a namespace are
// answered NotFound, and those in all namespaces with answer (nil: the
// fake's empty list).
func namespacedLists(answer error) *fakeClient {
	c := newFakeClient()
	c.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if a.GetNamespace() != "" {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "")
		}
		if answer != nil {
			return true, nil, answer
		}
		return false, nil, nil
	})
	return c
}

// TestWaitForCacheSyncEndsOnANamespaceForAClusterScopedResource: an
// informer given a Namespace for a cluster-scoped resource, whose list the
// API server answers NotFound, finds the scope out, from discovery with
// RESTConfig or RESTClient (asked once: the scope of a served resource
// does not change) and from a list in all namespaces with a dynamic
// Client, and WaitForCacheSync returns at once, naming the field and the
// fix. It waited for its context (20 s here), naming the NotFound alone,
// which a resource not served answers too.
func TestWaitForCacheSyncEndsOnANamespaceForAClusterScopedResource(t *testing.T) {
	const discovered = `informer nodes: informer cache not synced: invalid config: informer.Config.Namespace is "ns", but the API server's discovery shows nodes cluster-scoped: its objects are in no namespace, the list in one is answered NotFound and the cache would never sync; leave Namespace empty`
	for name, tc := range map[string]struct {
		config func(srv *notFoundServer) Config
		want   string
	}{
		"REST config": {
			func(srv *notFoundServer) Config {
				return Config{RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: &corev1.Node{}, GVR: nodes}
			},
			discovered,
		},
		"metadata only": {
			func(srv *notFoundServer) Config {
				return Config{RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: &metav1.PartialObjectMetadata{}, GVR: nodes}
			},
			discovered,
		},
		"REST client": {
			func(srv *notFoundServer) Config {
				return Config{RESTClient: kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL}).CoreV1().RESTClient(), ObjectType: &corev1.Node{}, GVR: nodes}
			},
			discovered,
		},
		"dynamic client": {
			func(*notFoundServer) Config { return Config{Client: namespacedLists(nil), GVR: widgets} },
			`informer widgets: informer cache not synced: invalid config: informer.Config.Namespace is "ns", but the API server lists widgets.example.com in all namespaces and answers NotFound in this one: it is cluster-scoped, its objects are in no namespace and the cache would never sync; leave Namespace empty`,
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newNotFoundServer(t)
			config := tc.config(srv)
			config.Namespace = "ns"
			config.Registerer = prometheus.NewRegistry()
			inf, err := New(config)
			if err != nil {
				t.Fatal(err)
			}
			err = runAndWait(t, inf, 20*time.Second)
			if !errors.Is(err, ErrNotSynced) || !errors.Is(err, ErrInvalidConfig) || err.Error() != tc.want {
				t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced and ErrInvalidConfig: %s", err, tc.want)
			}
			if config.Client != nil {
				return
			}
			// The informer goes on listing, with backoff, until Run ends;
			// discovery is not asked again.
			if err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return testutil.ToFloat64(inf.metrics.watchErrors) > 1, nil
			}); err != nil {
				t.Fatalf("waiting for the list to be retried: %v", err)
			}
			if n := srv.discovery.Load(); n != 1 {
				t.Errorf("%d discovery requests, want 1", n)
			}
		})
	}
}

// TestWaitForCacheSyncNamesAResourceNotServed: an informer given a
// Namespace for a resource the API server does not serve (a CRD not
// installed yet: discovery does not show it, the list in all namespaces is
// NotFound too) waits, as the CRD may come, and the wait's error says that
// the resource is not served; it named the NotFound alone.
func TestWaitForCacheSyncNamesAResourceNotServed(t *testing.T) {
	notServed := schema.GroupVersionResource{Group: "nothing.example.com", Version: "v1", Resource: "nothings"}
	for name, tc := range map[string]struct {
		config func(srv *notFoundServer) Config
		want   string
	}{
		"REST config": {
			func(srv *notFoundServer) Config {
				return Config{RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: &corev1.ConfigMap{}, GVR: notServed}
			},
			"nothings.nothing.example.com/v1",
		},
		"dynamic client": {
			func(*notFoundServer) Config {
				return Config{Client: namespacedLists(apierrors.NewNotFound(schema.GroupResource{}, "")), GVR: widgets}
			},
			"widgets.example.com/v1",
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := newNotFoundServer(t)
			c := tc.config(srv)
			c.Namespace = "ns"
			c.Registerer = prometheus.NewRegistry()
			inf, err := New(c)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			ran := make(chan error, 1)
			go func() { ran <- inf.Run(ctx) }()
			defer func() { cancel(); <-ran }()
			if err := wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
				return testutil.ToFloat64(inf.metrics.watchErrors) > 1, nil
			}); err != nil {
				t.Fatalf("waiting for the list to be retried: %v", err)
			}
			select {
			case <-inf.refused:
				t.Fatal("a resource not served ended the wait for the cache")
			default:
			}
			ended, end := context.WithCancelCause(ctx)
			end(errors.New("test over"))
			err = inf.WaitForCacheSync(ended)
			if !errors.Is(err, ErrNotSynced) || errors.Is(err, ErrInvalidConfig) || !apierrors.IsNotFound(err) ||
				!strings.Contains(err.Error(), "test over: last list or watch error: ") ||
				!strings.HasSuffix(err.Error(), " (the API server does not serve "+tc.want+": a CRD not installed yet?)") {
				t.Fatalf("WaitForCacheSync() = %v, want ErrNotSynced with the NotFound list, saying the resource is not served", err)
			}
		})
	}
}

// TestWaitForCacheSyncSyncsANamespacedResourceInstalledMeanwhile: a
// NotFound list of a Namespace, and then a discovery (or lists) showing the
// resource served and namespaced (a CRD installed in between) neither ends
// nor names the wait: the retried list syncs the cache.
func TestWaitForCacheSyncSyncsANamespacedResourceInstalledMeanwhile(t *testing.T) {
	c := newFakeClient()
	var lists atomic.Int32
	c.PrependReactor("list", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if lists.Add(1) == 1 {
			return true, nil, apierrors.NewNotFound(widgets.GroupResource(), "")
		}
		return false, nil, nil
	})
	inf, err := New(Config{Client: c, GVR: widgets, Namespace: "ns", Registerer: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if err := runAndWait(t, inf, 30*time.Second); err != nil {
		t.Fatalf("WaitForCacheSync() = %v, want nil once the retried list answered", err)
	}
	// The NotFound list, the two of the scope check (which found the
	// resource namespaced), the retried one.
	if n := lists.Load(); n < 4 {
		t.Errorf("%d lists, want at least 4: the scope checked", n)
	}
}

// sequenceDiscovery answers ServerResourcesForGroupVersionWithContext
// with its answers in turn, the last one again once they ran out.
type sequenceDiscovery struct {
	mu      sync.Mutex
	answers []discoveryAnswer
	calls   int
}

type discoveryAnswer struct {
	list *metav1.APIResourceList
	err  error
}

func (d *sequenceDiscovery) ServerResourcesForGroupVersionWithContext(context.Context, string) (*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	a := d.answers[min(d.calls, len(d.answers)-1)]
	d.calls++
	return a.list, a.err
}

// TestScopeCheckAsksUntilServed: a discovery that fails, or does not show
// the resource (a CRD not installed yet), is asked again at the next
// check; once it showed the resource served, its scope is kept, and
// discovery never asked again.
func TestScopeCheckAsksUntilServed(t *testing.T) {
	d := &sequenceDiscovery{answers: []discoveryAnswer{
		{err: errors.New("connection refused")},
		{err: apierrors.NewNotFound(schema.GroupResource{}, "")},
		{list: &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "gadgets", Namespaced: true}}}},
		{list: &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "widgets/status"}, {Name: "widgets", Namespaced: true}}}},
	}}
	c := &scopeCheck{ask: discoveryScope(d, widgets), discovered: true}
	for n, want := range []scope.Scope{scope.Unknown, scope.NotServed, scope.NotServed, scope.Namespaced, scope.Namespaced, scope.Namespaced} {
		if got := c.of(context.Background()); got != want {
			t.Errorf("check %d = %v, want %v", n+1, got, want)
		}
	}
	if d.calls != 4 {
		t.Errorf("%d discoveries, want 4: none once it showed the resource", d.calls)
	}
}

// TestScopeCheckIsBounded: a discovery that does not answer is given up
// after scopeTimeout: the reflector, which waits for it, retries its list.
func TestScopeCheckIsBounded(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &scopeCheck{ask: func(ctx context.Context) scope.Scope {
		if _, ok := ctx.Deadline(); !ok {
			t.Error("the scope is asked without a deadline")
		}
		<-ctx.Done()
		return scope.Unknown
	}}
	if got := c.of(ctx); got != scope.Unknown {
		t.Errorf("check with its context ended = %v, want Unknown", got)
	}
}
