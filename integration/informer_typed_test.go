package integration

import (
	"mime"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/informer"
)

// TestInformerTypedRESTClient checks the typed path of the informer: a
// clientset's RESTClient for a built-in kind, with a label selector, caches
// *corev1.ConfigMap and delivers typed events.
func TestInformerTypedRESTClient(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	inf, err := informer.New(informer.Config{
		RESTClient: kc.CoreV1().RESTClient(), ObjectType: &corev1.ConfigMap{},
		GVR:       corev1.SchemeGroupVersion.WithResource("configmaps"),
		Namespace: ns, LabelSelector: "app=typed", ResyncPeriod: -1, DropManagedFields: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	mk := func(name, app string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": app}}, Data: map[string]string{"k": "v"}}
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("listed", "typed")
	mk("other", "untyped")
	runInformer(t, inf)
	mk("watched", "typed")

	eventually(t, "the watched ConfigMap in the cache", func() bool {
		_, ok, _ := inf.Get(ns + "/watched")
		return ok
	})
	for _, name := range []string{"listed", "watched"} {
		obj, ok, err := inf.Get(ns + "/" + name)
		cm, typed := obj.(*corev1.ConfigMap)
		if err != nil || !ok || !typed {
			t.Fatalf("Get(%s/%s) = %T, %v, %v; want a cached *corev1.ConfigMap", ns, name, obj, ok, err)
		}
		if cm.Data["k"] != "v" || cm.ManagedFields != nil {
			t.Errorf("cached %s: data %v, managedFields %v; want the data and no managedFields", name, cm.Data, cm.ManagedFields)
		}
	}
	if _, ok, _ := inf.Get(ns + "/other"); ok {
		t.Error("the label selector did not filter ConfigMap other")
	}
	if err := kc.CoreV1().ConfigMaps(ns).Delete(t.Context(), "listed", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "listed to leave the cache", func() bool {
		_, ok, _ := inf.Get(ns + "/listed")
		return !ok
	})
}

// typedWidget is a Go type for the Widget CRD of createWidgetCRD.
type typedWidget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size string `json:"size"`
	} `json:"spec"`
}

func (w *typedWidget) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

type typedWidgetList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []typedWidget `json:"items"`
}

func (l *typedWidgetList) DeepCopyObject() runtime.Object {
	c := *l
	c.Items = make([]typedWidget, len(l.Items))
	for i := range l.Items {
		c.Items[i] = *l.Items[i].DeepCopyObject().(*typedWidget)
	}
	return &c
}

// TestInformerNewRESTClient checks NewRESTClient with a custom resource:
// Widgets are decoded straight into their Go type, listed and watched.
func TestInformerNewRESTClient(t *testing.T) {
	t.Parallel()
	gvr := createWidgetCRD(t)
	ns := newNamespace(t)
	w := newWidgets(t, gvr, ns)
	w.create("listed", nil)

	gv := gvr.GroupVersion()
	client, err := informer.NewRESTClient(env.Config(), gv, func(s *runtime.Scheme) error {
		s.AddKnownTypeWithName(gv.WithKind("Widget"), &typedWidget{})
		s.AddKnownTypeWithName(gv.WithKind("WidgetList"), &typedWidgetList{})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inf, err := informer.New(informer.Config{RESTClient: client, ObjectType: &typedWidget{}, GVR: gvr, Namespace: ns, ResyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)
	w.create("watched", nil)
	w.patch("watched", `{"spec":{"size":"large"}}`)
	eventually(t, "the watched Widget with size large", func() bool {
		obj, ok, _ := inf.Get(ns + "/watched")
		tw, typed := obj.(*typedWidget)
		return ok && typed && tw.Spec.Size == "large"
	})
	obj, ok, err := inf.Get(ns + "/listed")
	if tw, typed := obj.(*typedWidget); err != nil || !ok || !typed || tw.Spec.Size != "small" {
		t.Errorf("Get(%s/listed) = %#v, %v, %v; want the listed *typedWidget of size small", ns, obj, ok, err)
	}
}

// TestInformerTypedFromRESTConfig reads Widgets through informer.Config's
// RESTConfig and ObjectType: from the initial list and from the watch,
// every Widget is a *typedWidget with its TypeMeta, except one whose
// spec.size the Go type cannot hold, which stays unstructured (with a
// warning naming it) without stalling the others, and becomes typed again
// once it is fixed.
func TestInformerTypedFromRESTConfig(t *testing.T) {
	t.Parallel()
	gvr := createWidgetCRD(t)
	ns := newNamespace(t)
	w := newWidgets(t, gvr, ns)
	w.create("listed", nil)
	w.create("broken", nil)
	w.patch("broken", `{"spec":{"size":7}}`)

	var logs syncBuffer
	reg := prometheus.NewRegistry()
	inf, err := informer.New(informer.Config{
		RESTConfig: env.Config(), ObjectType: &typedWidget{}, GVR: gvr, Namespace: ns,
		ResyncPeriod: -1, DropManagedFields: true, Logger: log.NewLogfmtLogger(&logs), Registerer: reg,
	})
	if err != nil {
		t.Fatal(err)
	}
	runInformer(t, inf)

	typed := func(name, size string) func() bool {
		return func() bool {
			obj, exists, err := inf.Get(ns + "/" + name)
			tw, ok := obj.(*typedWidget)
			return err == nil && exists && ok && tw.Spec.Size == size && tw.Kind == "Widget" &&
				tw.APIVersion == gvr.GroupVersion().String() && len(tw.ManagedFields) == 0
		}
	}
	unstructuredWith := func(name string, size int64) func() bool {
		return func() bool {
			obj, exists, err := inf.Get(ns + "/" + name)
			u, ok := obj.(*unstructured.Unstructured)
			if err != nil || !exists || !ok {
				return false
			}
			got, _, _ := unstructured.NestedInt64(u.Object, "spec", "size")
			return got == size
		}
	}
	eventually(t, "listed typed", typed("listed", "small"))
	eventually(t, "broken unstructured", unstructuredWith("broken", 7))
	if !strings.Contains(logs.String(), "object="+ns+"/broken") {
		t.Errorf("logs = %q, want a warning naming %s/broken", logs.String(), ns)
	}

	w.create("watched", nil)
	w.patch("watched", `{"spec":{"size":9}}`)
	w.patch("broken", `{"spec":{"size":"large"}}`)
	eventually(t, "watched unstructured after its bad patch", unstructuredWith("watched", 9))
	eventually(t, "broken typed after its fix", typed("broken", "large"))
	w.patch("watched", `{"spec":{"size":"medium"}}`)
	eventually(t, "watched typed after its fix", typed("watched", "medium"))
	// broken from the list, watched from the watch (a relist would count
	// broken again, hence at least).
	if n := metricSum(t, reg, "operatorkit_informer_undecodable_objects_total", nil); n < 2 {
		t.Errorf("undecodable_objects_total = %v, want at least 2", n)
	}
	w.delete("listed")
	eventually(t, "listed deleted", func() bool {
		_, exists, _ := inf.Get(ns + "/listed")
		return !exists && len(inf.List()) == 2
	})
}

// TestInformerTypedBuiltInReadsProtobuf reads ConfigMaps through
// informer.Config's RESTConfig and ObjectType: the list and the watch come
// as protobuf (as client-go's clientsets read built-in kinds), or as JSON
// when the config asks for it, and either way every cached ConfigMap
// carries its apiVersion and kind, its data, and no managedFields.
func TestInformerTypedBuiltInReadsProtobuf(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	kc := kubeClient(t)
	mk := func(name string) {
		t.Helper()
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": name}}
		if _, err := kc.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mk("listed")
	for _, tc := range []struct{ contentType, want string }{
		{"", runtime.ContentTypeProtobuf},
		{runtime.ContentTypeJSON, runtime.ContentTypeJSON},
	} {
		t.Run("content type "+tc.contentType, func(t *testing.T) {
			var mu sync.Mutex
			seen := map[string]bool{} // the content types of the answers to the informer's list and watch
			cfg := rest.CopyConfig(env.Config())
			cfg.ContentType = tc.contentType
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
				return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
					resp, err := rt.RoundTrip(r)
					if err == nil && strings.HasSuffix(r.URL.Path, "/namespaces/"+ns+"/configmaps") {
						mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
						mu.Lock()
						seen[mt] = true
						mu.Unlock()
					}
					return resp, err
				})
			})
			inf, err := informer.New(informer.Config{
				RESTConfig: cfg, ObjectType: &corev1.ConfigMap{}, GVR: corev1.SchemeGroupVersion.WithResource("configmaps"),
				Namespace: ns, ResyncPeriod: -1, DropManagedFields: true,
			})
			if err != nil {
				t.Fatal(err)
			}
			runInformer(t, inf)
			watched := "watched-" + strings.ToLower(strings.TrimPrefix(tc.want, "application/"))
			watched = strings.NewReplacer(".", "-", "/", "-").Replace(watched)
			mk(watched)
			eventually(t, "the watched ConfigMap in the cache", func() bool {
				_, ok, _ := inf.Get(ns + "/" + watched)
				return ok
			})
			for _, name := range []string{"listed", watched} {
				obj, ok, err := inf.Get(ns + "/" + name)
				cm, typed := obj.(*corev1.ConfigMap)
				if err != nil || !ok || !typed {
					t.Fatalf("Get(%s/%s) = %T, %v, %v; want a cached *corev1.ConfigMap", ns, name, obj, ok, err)
				}
				if cm.APIVersion != "v1" || cm.Kind != "ConfigMap" || cm.Data["k"] != name || cm.ManagedFields != nil {
					t.Errorf("cached %s: apiVersion %q, kind %q, data %v, managedFields %v; want v1, ConfigMap, k=%s and none",
						name, cm.APIVersion, cm.Kind, cm.Data, cm.ManagedFields, name)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || !seen[tc.want] {
				t.Errorf("the list and watch were answered as %v, want %s only", seen, tc.want)
			}
		})
	}
}
