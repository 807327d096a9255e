package operator

import (
	"errors"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/informer"
)

// TestInformerMetadataOnly: ObjectType &metav1.PartialObjectMetadata{}
// makes a metadata-only informer on the Operator's REST config, another
// than the informer of whole objects of the same key; a later call with
// the same ObjectType shares it, and with sharding its selector gets the
// shard label as any other informer's does.
func TestInformerMetadataOnly(t *testing.T) {
	sh := &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}}
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(), Sharding: sh})
	if err != nil {
		t.Fatal(err)
	}
	secrets := corev1.SchemeGroupVersion.WithResource("secrets")
	full, err := o.Informer(informer.Config{GVR: secrets, Namespace: "ns", ObjectType: &corev1.Secret{}})
	if err != nil {
		t.Fatal(err)
	}
	md, err := o.Informer(informer.Config{GVR: secrets, Namespace: "ns", ObjectType: &metav1.PartialObjectMetadata{}})
	if err != nil {
		t.Fatal(err)
	}
	if md.Informer == full.Informer || !md.MetadataOnly() || full.MetadataOnly() {
		t.Fatalf("metadata-only informer %p (MetadataOnly %t), full one %p (MetadataOnly %t): want two, the first metadata-only",
			md.Informer, md.MetadataOnly(), full.Informer, full.MetadataOnly())
	}
	again, err := o.Informer(informer.Config{GVR: secrets, Namespace: "ns", ObjectType: &metav1.PartialObjectMetadata{}})
	if err != nil || again.Informer != md.Informer {
		t.Errorf("a second call for the metadata-only informer = %v (err %v), want the first", again, err)
	}
	if _, err := o.Informer(informer.Config{GVR: secrets, Namespace: "ns", ObjectType: &corev1.Secret{}}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a second call for the full informer with ObjectType = %v, want ErrInvalidConfig", err)
	}
	if len(o.order) != 2 || !strings.HasSuffix(o.order[1].key.String(), "(metadata only)") {
		t.Errorf("informers %d, the second %q; want 2, the second named metadata only", len(o.order), o.order[1].key)
	}

	things, err := o.Informer(informer.Config{GVR: thingsGVR, ObjectType: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Thing"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, sel := things.Selection()
	if !things.MetadataOnly() || !sel.Matches(labels.Set{ShardLabelPrefix + "op": o.shard.cfg.Identity}) || sel.Matches(labels.Set{}) {
		t.Errorf("sharded metadata-only informer: MetadataOnly %t, selector %q; want the shard label selected", things.MetadataOnly(), sel)
	}
}

// TestAssignKeyIgnoresMetadataOnly: the sharded informers of whole objects
// and of metadata only of one selection are one assign source (the
// assigner would otherwise watch its free objects twice and queue each
// twice); another selection is another source.
func TestAssignKeyIgnoresMetadataOnly(t *testing.T) {
	sh := &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}}
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(), Sharding: sh})
	if err != nil {
		t.Fatal(err)
	}
	for _, cfg := range []informer.Config{
		{GVR: thingsGVR, Namespace: "ns", LabelSelector: "app=web"},
		{GVR: thingsGVR, Namespace: "ns", LabelSelector: "app=web", ObjectType: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Thing"}}},
		{GVR: thingsGVR, Namespace: "ns", LabelSelector: "app=db", ObjectType: &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "Thing"}}},
	} {
		if _, err := o.Informer(cfg); err != nil {
			t.Fatal(err)
		}
	}
	full, md, other := o.order[0], o.order[1], o.order[2]
	if full.key == md.key || full.assignKey() != md.assignKey() || md.assignKey() == other.assignKey() || full.assignKey().labels != "app=web" {
		t.Errorf("assign keys %v, %v, %v (informer keys %v, %v); want the first two equal, with the user's selector, and the third another",
			full.assignKey(), md.assignKey(), other.assignKey(), full.key, md.key)
	}
}

// TestReferencesAndOwnsMetadataOnlySource: References and Owns take a
// metadata-only source, and References finds the referrers of a
// *metav1.PartialObjectMetadata by its key. Events reaching a Framework
// from such a source are tested against a real API server (integration's
// TestWatchesMetadataOnlySecrets).
func TestReferencesAndOwnsMetadataOnlySource(t *testing.T) {
	o, f := thingsFramework(t)
	secrets, err := o.Informer(informer.Config{GVR: corev1.SchemeGroupVersion.WithResource("secrets"), ObjectType: &metav1.PartialObjectMetadata{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := o.Owns(f, schema.GroupKind{Group: things.Group, Kind: "Thing"}, secrets); err != nil {
		t.Errorf("Owns(a metadata-only child informer) = %v", err)
	}
	refs := func(obj any) []string {
		u := obj.(*unstructured.Unstructured)
		name, _, _ := unstructured.NestedString(u.Object, "spec", "secretName")
		return []string{u.GetNamespace() + "/" + name}
	}
	if err := o.References(f, secrets, refs); err != nil {
		t.Fatalf("References(a metadata-only source) = %v", err)
	}
	indexer := f.Informer().(*SharedInformer).SharedIndexInformer().GetIndexer()
	var index string
	for name := range indexer.GetIndexers() {
		if strings.HasPrefix(name, "operatorkit.io/references/") {
			index = name
		}
	}
	thing := &unstructured.Unstructured{}
	thing.SetAPIVersion(things.GroupVersion().String())
	thing.SetKind("Thing")
	thing.SetNamespace("ns")
	thing.SetName("a")
	_ = unstructured.SetNestedField(thing.Object, "db", "spec", "secretName")
	if err := indexer.Add(thing); err != nil {
		t.Fatal(err)
	}
	secret := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db"}}
	if got := referrers(indexer, index)(secret); len(got) != 1 || got[0] != "ns/a" {
		t.Errorf("the objects referring to the Secret's metadata = %q, want [ns/a]", got)
	}
}
