package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/router"
)

// secretReader is a resource that records, for each reconciliation of a
// widget, the annotation "rev" of the Secret named in the widget's label
// "secret", as the metadata-only cache holds it.
type secretReader struct {
	secrets *operatorpkg.SharedInformer
	mu      sync.Mutex
	seen    []string // "widget rev"
}

func (r *secretReader) Name() string { return "secret-reader" }
func (r *secretReader) EnsureCreated(_ context.Context, obj any) error {
	w := obj.(*unstructured.Unstructured)
	rev := "none"
	if s, ok, _ := informer.Get[*metav1.PartialObjectMetadata](r.secrets, w.GetNamespace(), w.GetLabels()["secret"]); ok {
		rev = s.Annotations["rev"]
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, w.GetName()+" "+rev)
	return nil
}
func (r *secretReader) EnsureDeleted(context.Context, any) error { return nil }

// saw reports whether a reconciliation saw entry ("widget rev").
func (r *secretReader) saw(entry string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.seen {
		if s == entry {
			return true
		}
	}
	return false
}

// acceptRecorder records the Accept header of the requests for Secrets.
type acceptRecorder struct {
	mu      sync.Mutex
	accepts []string
}

func (a *acceptRecorder) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/secrets") {
			a.mu.Lock()
			a.accepts = append(a.accepts, req.Header.Get("Accept"))
			a.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

// TestWatchesMetadataOnlySecrets: an operator Watches the Secrets of its
// namespace through a metadata-only informer (ObjectType
// &metav1.PartialObjectMetadata{}). The informer lists and watches them
// through the metadata protocol; its cache, and Watches' map function,
// hold *metav1.PartialObjectMetadata of kind Secret, without data or
// managedFields; a change of a Secret's annotations, of its labels (which
// wakes the widget it named before too) and of its data wakes the widgets.
func TestWatchesMetadataOnlySecrets(t *testing.T) {
	t.Parallel()
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	kube := kubeClient(t)
	ctx := t.Context()

	rc := rest.CopyConfig(env.Config())
	accepts := &acceptRecorder{}
	rc.Wrap(accepts.wrap)
	op, err := operatorpkg.New(operatorpkg.Config{RESTConfig: rc, Name: "metadata-watcher", Logger: log.NewNopLogger()})
	must(t, err)
	widgets, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
	must(t, err)
	secrets, err := op.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Namespace: ns, ObjectType: &metav1.PartialObjectMetadata{}})
	must(t, err)
	reader := &secretReader{secrets: secrets}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", reader)}})
	must(t, err)
	f, err := framework.New(framework.Config{Name: "widgets", Informer: widgets, ResourceRouter: rt,
		Client: op.Dynamic(), Resource: widgetGVR, Registerer: op.Registry(), DisableFinalizers: true})
	must(t, err)
	must(t, op.Add(f))
	var mu sync.Mutex
	var mapped []string // what the map function got, when not a Secret's metadata
	must(t, op.Watches(f, secrets, func(obj any) []string {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok || m.Kind != "Secret" || m.APIVersion != "v1" {
			mu.Lock()
			mapped = append(mapped, fmt.Sprintf("%T %v", obj, obj))
			mu.Unlock()
			return nil
		}
		if w := m.Labels["widget"]; w != "" {
			return []string{m.Namespace + "/" + w}
		}
		return nil
	}))
	stop, _ := runOperator(op)
	t.Cleanup(func() { must(t, stop()) })

	createWidget(t, newWidget(ns, "w1", "", nil))
	w2 := newWidget(ns, "w2", "", nil)
	w2.SetLabels(map[string]string{"secret": "db"})
	createWidget(t, w2)
	if _, err := widgetClient(t, ns).Patch(ctx, "w1", types.MergePatchType, []byte(`{"metadata":{"labels":{"secret":"db"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	poll(t, "both widgets reconciled without their Secret", func(context.Context) (bool, error) {
		return reader.saw("w1 none") && reader.saw("w2 none"), nil
	})

	// The Secret appears, naming w1: its add wakes w1.
	_, err = kube.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"widget": "w1"}, Annotations: map[string]string{"rev": "1"}},
		Data:       map[string][]byte{"password": []byte("secret-value")},
	}, metav1.CreateOptions{})
	must(t, err)
	poll(t, "w1 woken by the Secret's add", func(context.Context) (bool, error) { return reader.saw("w1 1"), nil })

	// The cache holds its metadata only.
	obj, ok, err := secrets.Get(ns + "/db")
	if m, isMeta := obj.(*metav1.PartialObjectMetadata); err != nil || !ok || !isMeta || m.Kind != "Secret" || m.APIVersion != "v1" || m.ManagedFields != nil || m.Labels["widget"] != "w1" {
		t.Fatalf("Get(db) = %#v, %v, %v; want a PartialObjectMetadata of v1 Secret with its labels, without managedFields", obj, ok, err)
	}
	// Asked for the whole Secret, the metadata-only cache answers an error
	// that says what it holds.
	if _, _, err := informer.Get[*corev1.Secret](secrets, ns, "db"); !errors.Is(err, informer.ErrWrongType) ||
		err.Error() != "get secrets "+ns+"/db: the cache holds a *v1.PartialObjectMetadata, not a *v1.Secret: cached object of another type" {
		t.Errorf("Get[*corev1.Secret](db) on the metadata-only cache: error = %v, want ErrWrongType naming both types", err)
	}
	for _, o := range secrets.List() {
		if _, ok := o.(*metav1.PartialObjectMetadata); !ok {
			t.Errorf("List() holds a %T", o)
		}
	}
	if !secrets.MetadataOnly() {
		t.Error("MetadataOnly() = false")
	}

	// An annotation changes: w1 is woken.
	patchSecret := func(patch string) {
		t.Helper()
		if _, err := kube.CoreV1().Secrets(ns).Patch(ctx, "db", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patchSecret(`{"metadata":{"annotations":{"rev":"2"}}}`)
	poll(t, "w1 woken by the Secret's annotation", func(context.Context) (bool, error) { return reader.saw("w1 2"), nil })

	// The label moves to w2 (and the annotation with it, to tell the
	// wake-ups apart): both are woken, w1 as the Secret's previous widget.
	patchSecret(`{"metadata":{"labels":{"widget":"w2"},"annotations":{"rev":"3"}}}`)
	poll(t, "w1 and w2 woken by the Secret's label", func(context.Context) (bool, error) {
		return reader.saw("w1 3") && reader.saw("w2 3"), nil
	})

	// The data alone changes: the resourceVersion does, so w2 is woken
	// (and sees the annotation the cache holds, unchanged).
	before := func() int {
		reader.mu.Lock()
		defer reader.mu.Unlock()
		n := 0
		for _, s := range reader.seen {
			if s == "w2 3" {
				n++
			}
		}
		return n
	}()
	patchSecret(`{"data":{"password":"` + "bmV3LXZhbHVl" + `"}}`)
	poll(t, "w2 woken by a change of the Secret's data", func(context.Context) (bool, error) {
		reader.mu.Lock()
		defer reader.mu.Unlock()
		n := 0
		for _, s := range reader.seen {
			if s == "w2 3" {
				n++
			}
		}
		return n > before, nil
	})

	mu.Lock()
	if len(mapped) != 0 {
		t.Errorf("the map function got %q, want only PartialObjectMetadata of v1 Secrets", mapped)
	}
	mu.Unlock()
	accepts.mu.Lock()
	defer accepts.mu.Unlock()
	if len(accepts.accepts) == 0 {
		t.Fatal("no list or watch of Secrets seen")
	}
	for _, a := range accepts.accepts {
		if !strings.Contains(a, partialObjectMetadata) {
			t.Errorf("a list or watch of Secrets asked for %q, want metadata only (%s)", a, partialObjectMetadata)
		}
	}
}

// BenchmarkSecretsCacheHeap measures the heap that an informer's cache of
// secretsN Secrets of 1 KiB of data each takes, with whole objects (the
// typed path) and with metadata only, both dropping managedFields as
// Operator.Informer does: go test -run XXX -bench SecretsCacheHeap
// -benchtime 1x. The figure is heap-B/secret.
func BenchmarkSecretsCacheHeap(b *testing.B) {
	const secretsN = 2000
	kube := kubeClient(b)
	ns := fmt.Sprintf("bench-secrets-heap-%d", nsCounter.Add(1))
	if _, err := kube.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	data := map[string][]byte{"key": []byte(strings.Repeat("x", 1024))}
	for i := range secretsN {
		_, err := kube.CoreV1().Secrets(ns).Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s%04d", i), Labels: map[string]string{"app": "bench"}, Annotations: map[string]string{"rev": "1"}},
			Data:       data,
		}, metav1.CreateOptions{})
		if err != nil {
			b.Fatal(err)
		}
	}
	for _, mode := range []string{"full", "metadata"} {
		b.Run(mode, func(b *testing.B) {
			for range b.N {
				cfg := informer.Config{RESTConfig: env.Config(), GVR: corev1.SchemeGroupVersion.WithResource("secrets"), Namespace: ns,
					ObjectType: &corev1.Secret{}, DropManagedFields: true, ResyncPeriod: -1}
				if mode == "metadata" {
					cfg.ObjectType = &metav1.PartialObjectMetadata{}
				}
				heap := func() uint64 {
					runtime.GC()
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					return ms.HeapAlloc
				}
				start := heap()
				inf, err := informer.New(cfg)
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() { done <- inf.Run(ctx) }()
				syncCtx, syncCancel := context.WithTimeout(ctx, time.Minute)
				err = inf.WaitForCacheSync(syncCtx)
				syncCancel()
				if err != nil {
					b.Fatal(err)
				}
				if n := len(inf.List()); n != secretsN {
					b.Fatalf("cache holds %d Secrets, want %d", n, secretsN)
				}
				held := heap() - start
				runtime.KeepAlive(inf)
				b.ReportMetric(float64(held)/secretsN, "heap-B/secret")
				cancel()
				<-done
			}
		})
	}
}
