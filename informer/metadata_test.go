package informer

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

var secrets = corev1.SchemeGroupVersion.WithResource("secrets")

// metadataServer is a stand-in API server that answers what client-go's
// metadata client asks for (PartialObjectMetadata lists and watches, in
// JSON) and the discovery of example.com/v1 (widgets: Widget). It records
// the requests, and sends the events given to push on the open watches.
type metadataServer struct {
	*httptest.Server
	objects []string // metadata documents, without apiVersion and kind
	push    chan string

	mu        sync.Mutex
	requests  []*http.Request
	discovery int
}

func newMetadataServer(t *testing.T, objects ...string) *metadataServer {
	s := &metadataServer{objects: objects, push: make(chan string)}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// partial returns a PartialObjectMetadata document of metadata m.
func partial(m string) string {
	return `{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":` + m + `}`
}

func (s *metadataServer) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r)
	if r.URL.Path == "/apis/example.com/v1" {
		s.discovery++
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if r.URL.Path == "/apis/example.com/v1" {
		fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"example.com/v1","resources":[{"name":"widgets","singularName":"widget","namespaced":true,"kind":"Widget","verbs":["list","watch"]}]}`)
		return
	}
	q := r.URL.Query()
	if q.Get("watch") != "true" {
		items := make([]string, len(s.objects))
		for i, o := range s.objects {
			items[i] = partial(o)
		}
		fmt.Fprintf(w, `{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5"},"items":[%s]}`, strings.Join(items, ","))
		return
	}
	if q.Get("sendInitialEvents") == "true" {
		for _, o := range s.objects {
			fmt.Fprintf(w, `{"type":"ADDED","object":%s}`+"\n", partial(o))
		}
		fmt.Fprintf(w, `{"type":"BOOKMARK","object":%s}`+"\n", partial(`{"resourceVersion":"5","annotations":{"k8s.io/initial-events-end":"true"}}`))
	}
	w.(http.Flusher).Flush()
	for {
		select {
		case e := <-s.push:
			fmt.Fprintln(w, e)
			w.(http.Flusher).Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// listsAndWatches returns the requests other than discovery's.
func (s *metadataServer) listsAndWatches() []*http.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*http.Request
	for _, r := range s.requests {
		if !strings.HasPrefix(r.URL.Path, "/apis/example.com/v1") || strings.Count(r.URL.Path, "/") > 3 {
			out = append(out, r)
		}
	}
	return out
}

// run runs inf until the test ends and waits for its cache.
func run(t *testing.T, inf *Informer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run() = %v, want nil", err)
		}
	})
	syncCtx, syncCancel := context.WithTimeout(ctx, 30*time.Second)
	defer syncCancel()
	if err := inf.WaitForCacheSync(syncCtx); err != nil {
		t.Fatalf("WaitForCacheSync() = %v", err)
	}
}

// kindRecorder records the Go type, kind and name of each object its
// handler gets.
type kindRecorder struct{ recorder }

func describe(obj any) string {
	m, ok := obj.(*metav1.PartialObjectMetadata)
	if !ok {
		return fmt.Sprintf("%T", obj)
	}
	return m.APIVersion + "/" + m.Kind + " " + m.Name + " app=" + m.Labels["app"]
}

func (r *kindRecorder) OnAdd(obj any, _ bool) { r.add("add " + describe(obj)) }
func (r *kindRecorder) OnUpdate(_, obj any)   { r.add("update " + describe(obj)) }
func (r *kindRecorder) OnDelete(obj any)      { r.add("delete " + describe(obj)) }

// TestMetadataOnly: ObjectType &metav1.PartialObjectMetadata{} lists and
// watches through the metadata client (the Accept header asks for
// PartialObjectMetadata, the selectors and namespace are sent), and the
// cache, the handlers, Get, List, Mutation and the metrics see
// *metav1.PartialObjectMetadata objects carrying the resource's apiVersion
// and kind, without managedFields when DropManagedFields is set.
func TestMetadataOnly(t *testing.T) {
	srv := newMetadataServer(t, `{"name":"s1","namespace":"ns","resourceVersion":"5","labels":{"app":"a"},"managedFields":[{"manager":"m","operation":"Apply"}]}`)
	reg := prometheus.NewPedanticRegistry()
	inf, err := New(Config{
		RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: &metav1.PartialObjectMetadata{}, GVR: secrets,
		Namespace: "ns", LabelSelector: "app=a", FieldSelector: "metadata.name!=x", ResyncPeriod: -1, DropManagedFields: true, Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	if !inf.MetadataOnly() {
		t.Error("MetadataOnly() = false for ObjectType *metav1.PartialObjectMetadata")
	}
	rec := &kindRecorder{}
	if _, err := inf.AddEventHandler(rec); err != nil {
		t.Fatal(err)
	}
	run(t, inf)
	rec.waitFor(t, "add v1/Secret s1 app=a")

	obj, ok, err := inf.Get("ns/s1")
	m, isMeta := obj.(*metav1.PartialObjectMetadata)
	if err != nil || !ok || !isMeta {
		t.Fatalf("Get(ns/s1) = %T, %v, %v; want a *metav1.PartialObjectMetadata", obj, ok, err)
	}
	if m.APIVersion != "v1" || m.Kind != "Secret" || m.ManagedFields != nil || m.Labels["app"] != "a" {
		t.Errorf("Get(ns/s1) = %+v; want apiVersion v1, kind Secret, its labels and no managedFields", m)
	}
	if l := inf.List(); len(l) != 1 || l[0] != obj {
		t.Errorf("List() = %v, want the one object", l)
	}
	for _, r := range srv.listsAndWatches() {
		q := r.URL.Query()
		if r.URL.Path != "/api/v1/namespaces/ns/secrets" || q.Get("labelSelector") != "app=a" || q.Get("fieldSelector") != "metadata.name!=x" ||
			!strings.Contains(r.Header.Get("Accept"), "as=PartialObjectMetadata") {
			t.Errorf("request %s %s Accept %q; want the namespace's secrets, the selectors and metadata only", r.Method, r.URL, r.Header.Get("Accept"))
		}
	}

	// A change of the labels, from the watch.
	srv.push <- `{"type":"MODIFIED","object":` + partial(`{"name":"s1","namespace":"ns","resourceVersion":"6","labels":{"app":"b"}}`) + `}`
	rec.waitFor(t, "add v1/Secret s1 app=a", "update v1/Secret s1 app=b")

	// The typed answer of a write, recorded as its metadata.
	inf.Mutation(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s1", ResourceVersion: "7", Labels: map[string]string{"app": "c"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "m"}}}, Data: map[string][]byte{"k": []byte("v")}})
	obj, _, _ = inf.Get("ns/s1")
	if m, ok := obj.(*metav1.PartialObjectMetadata); !ok || m.ResourceVersion != "7" || m.Labels["app"] != "c" || m.Kind != "Secret" || m.APIVersion != "v1" || m.ManagedFields != nil {
		t.Errorf("Get after Mutation(a typed Secret) = %#v; want its metadata as a PartialObjectMetadata of kind Secret, without managedFields", obj)
	}

	want := `
		# HELP operatorkit_informer_cache_objects Objects in the cache of running informers.
		# TYPE operatorkit_informer_cache_objects gauge
		operatorkit_informer_cache_objects{informer="secrets"} 1
	`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "operatorkit_informer_cache_objects"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(inf.metrics.updates); got != 1 {
		t.Errorf("events_total{event=update} = %v, want 1", got)
	}
}

// TestMetadataOnlyKind: the kind of a custom resource comes from the
// discovery of its group version, once, unless ObjectType's TypeMeta names
// it; Config.Transform gets the object with its kind set. A Mutation before
// the kind is known is not recorded (Get would return it without its
// kind); once it is known, it is.
func TestMetadataOnlyKind(t *testing.T) {
	for _, tt := range []struct {
		name          string
		objType       *metav1.PartialObjectMetadata
		wantDiscovery int
		wantRV        string // after a Mutation before Run
	}{
		{name: "discovered", objType: &metav1.PartialObjectMetadata{}, wantDiscovery: 1, wantRV: "5"},
		{name: "from ObjectType", objType: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Widget"}}, wantRV: "9"},
		{name: "from ObjectType with its apiVersion", objType: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}}, wantRV: "9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := newMetadataServer(t, `{"name":"w1","namespace":"ns","resourceVersion":"5"}`)
			var mu sync.Mutex
			var seen []string
			inf, err := New(Config{RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: tt.objType, GVR: widgets, ResyncPeriod: -1,
				Transform: func(obj any) (any, error) {
					mu.Lock()
					defer mu.Unlock()
					seen = append(seen, describe(obj))
					return obj, nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			inf.Mutation(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "w1", ResourceVersion: "9"}})
			run(t, inf)
			obj, _, _ := inf.Get("ns/w1")
			if m, ok := obj.(*metav1.PartialObjectMetadata); !ok || m.APIVersion != "example.com/v1" || m.Kind != "Widget" || m.ResourceVersion != tt.wantRV {
				t.Errorf("Get(ns/w1) = %#v; want a PartialObjectMetadata of example.com/v1 Widget at resourceVersion %s", obj, tt.wantRV)
			}
			mu.Lock()
			for _, s := range seen {
				if s != "example.com/v1/Widget w1 app=" {
					t.Errorf("Transform got %q, want the object with its kind", seen)
				}
			}
			if len(seen) == 0 {
				t.Error("Transform got nothing")
			}
			mu.Unlock()
			srv.mu.Lock()
			defer srv.mu.Unlock()
			if srv.discovery != tt.wantDiscovery {
				t.Errorf("discovery requests = %d, want %d", srv.discovery, tt.wantDiscovery)
			}
		})
	}
}

// fakeDiscovery answers ServerResourcesForGroupVersionWithContext with
// list or err.
type fakeDiscovery struct {
	list  *metav1.APIResourceList
	err   error
	calls int
}

func (d *fakeDiscovery) ServerResourcesForGroupVersionWithContext(context.Context, string) (*metav1.APIResourceList, error) {
	d.calls++
	return d.list, d.err
}

func (d *fakeDiscovery) ServerGroupsAndResourcesWithContext(context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	return nil, nil, errors.New("not used")
}

func (d *fakeDiscovery) ServerPreferredResourcesWithContext(context.Context) ([]*metav1.APIResourceList, error) {
	return nil, errors.New("not used")
}

func (d *fakeDiscovery) ServerPreferredNamespacedResourcesWithContext(context.Context) ([]*metav1.APIResourceList, error) {
	return nil, errors.New("not used")
}

// TestMetadataKindResolve: a discovery that fails, or does not list the
// resource, fails the list (client-go retries it) and is asked again next
// time; once it answered, it is never asked again.
func TestMetadataKindResolve(t *testing.T) {
	d := &fakeDiscovery{err: errors.New("connection refused")}
	k := &metadataKind{gvr: widgets, discovery: d}
	if err := k.resolve(context.Background()); err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("resolve() with discovery failing = %v, want its error", err)
	}
	d.err, d.list = nil, &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "gadgets", Kind: "Gadget"}}}
	if err := k.resolve(context.Background()); err == nil || !strings.Contains(err.Error(), `does not serve resource "widgets" in example.com/v1`) {
		t.Errorf("resolve() without the resource = %v, want it named", err)
	}
	d.list.APIResources = append(d.list.APIResources, metav1.APIResource{Name: "widgets", Kind: "Widget"})
	for range 2 {
		if err := k.resolve(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if gvk := k.kind.Load(); gvk == nil || *gvk != widgets.GroupVersion().WithKind("Widget") || d.calls != 3 {
		t.Errorf("kind = %v after %d discoveries; want example.com/v1 Widget after 3", gvk, d.calls)
	}
	obj, _ := k.transform(&metav1.PartialObjectMetadata{})
	if m := obj.(*metav1.PartialObjectMetadata); m.Kind != "Widget" || m.APIVersion != "example.com/v1" {
		t.Errorf("transform() = %+v, want the kind set", m.TypeMeta)
	}
}

// TestSchemeKind: built-in resources get their kind from client-go's
// scheme; others are left to discovery.
func TestSchemeKind(t *testing.T) {
	for gvr, want := range map[schema.GroupVersionResource]string{
		secrets: "Secret",
		corev1.SchemeGroupVersion.WithResource("endpoints"):                      "Endpoints",
		{Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}:       "Ingress",
		{Group: "apps", Version: "v1", Resource: "deployments"}:                  "Deployment",
		{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}: "NetworkPolicy",
		widgets: "",
		corev1.SchemeGroupVersion.WithResource("widgets"): "",
	} {
		gvk, ok := schemeKind(gvr)
		if ok != (want != "") || gvk.Kind != want || ok && gvk.GroupVersion() != gvr.GroupVersion() {
			t.Errorf("schemeKind(%s) = %v, %v; want %q", gvr, gvk, ok, want)
		}
	}
}

// TestMetadataOnlyRefusesConvertTo: ConvertTo is refused on a
// metadata-only informer; other transforms, and ConvertTo elsewhere, are
// not.
func TestMetadataOnlyRefusesConvertTo(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	_, err := New(Config{RESTConfig: cfg, ObjectType: &metav1.PartialObjectMetadata{}, GVR: secrets, Transform: ConvertTo[*corev1.Secret](nil)})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "informer.Config.Transform is an informer.ConvertTo") {
		t.Errorf("New(metadata only, ConvertTo) = %v, want ErrInvalidConfig naming Transform", err)
	}
	if _, err := New(Config{RESTConfig: cfg, ObjectType: &metav1.PartialObjectMetadata{}, GVR: secrets, Transform: func(obj any) (any, error) { return obj, nil }}); err != nil {
		t.Errorf("New(metadata only, a transform of one's own) = %v", err)
	}
	if _, err := New(Config{Client: newFakeClient(), GVR: widgets, Transform: ConvertTo[*corev1.Secret](nil)}); err != nil {
		t.Errorf("New(Client, ConvertTo) = %v", err)
	}
	if isConvertTo(cache.TransformFunc(func(obj any) (any, error) { return obj, nil })) || isConvertTo(nil) {
		t.Error("isConvertTo is true for a transform of one's own, or nil")
	}
}

// TestNewRefusesAListObjectType: an ObjectType of a list type
// (&metav1.PartialObjectMetadataList{}, as controller-runtime's metadata
// lists are written, or &corev1.ConfigMapList{}) decodes no object of the
// list or the watch: the cache never synced, and Run waited
// CacheSyncTimeout with no list error to name. New refuses it.
func TestNewRefusesAListObjectType(t *testing.T) {
	cfg := &rest.Config{Host: "http://127.0.0.1:1"}
	configMaps := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	for _, c := range []Config{
		{RESTConfig: cfg, ObjectType: &metav1.PartialObjectMetadataList{}, GVR: secrets},
		{RESTConfig: cfg, ObjectType: &corev1.ConfigMapList{}, GVR: configMaps},
		{RESTClient: coreV1RESTClient(t), ObjectType: &corev1.ConfigMapList{}, GVR: configMaps},
	} {
		want := fmt.Sprintf("informer.Config.ObjectType %T is a list type", c.ObjectType)
		if _, err := New(c); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("New(ObjectType %T) = %v, want ErrInvalidConfig saying %q", c.ObjectType, err, want)
		}
	}
}

// TestNewRefusesAnObjectTypeOfAnotherKind: an ObjectType of client-go's
// scheme of another kind than GVR's built-in resource (a Secret for
// configmaps) was taken, and the typed path, which decodes by the kind the
// API server sends, cached ConfigMaps that a consumer's
// obj.(*corev1.Secret) would panic on; New refuses it, naming both kinds.
// A type or a resource the scheme does not know cannot be told.
func TestNewRefusesAnObjectTypeOfAnotherKind(t *testing.T) {
	cfg := &rest.Config{Host: "https://cluster.example"}
	configMaps := corev1.SchemeGroupVersion.WithResource("configmaps")
	_, err := New(Config{RESTConfig: cfg, GVR: configMaps, ObjectType: &corev1.Secret{}, Registerer: prometheus.NewRegistry()})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "*v1.Secret is a Secret, but configmaps holds ConfigMap objects") {
		t.Fatalf("New(configmaps, ObjectType *corev1.Secret) = %v, want ErrInvalidConfig naming both kinds", err)
	}
	for name, c := range map[string]Config{
		"its own kind":      {RESTConfig: cfg, GVR: configMaps, ObjectType: &corev1.ConfigMap{}},
		"unstructured":      {RESTConfig: cfg, GVR: configMaps, ObjectType: &unstructured.Unstructured{}},
		"a custom resource": {RESTConfig: cfg, GVR: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, ObjectType: &corev1.Secret{}},
		"metadata only":     {RESTConfig: cfg, GVR: configMaps, ObjectType: &metav1.PartialObjectMetadata{}},
		"a dynamic client":  {Client: newFakeClient(), GVR: configMaps, ObjectType: &corev1.Secret{}},
	} {
		c.Registerer = prometheus.NewRegistry()
		if _, err := New(c); err != nil {
			t.Errorf("New(%s) = %v, want nil", name, err)
		}
	}
}
