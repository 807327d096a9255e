package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// TestShardingChildrenFollowTheirOwner: with Sharding.Children and a child
// resource given Operator.ShardLabels, every widget's ConfigMap carries its
// widget's shard label, each replica's ConfigMap cache holds the children
// of its own widgets only, and when a replica stops, its widgets' children
// are relabelled by their new owner and move into its cache.
func TestShardingChildrenFollowTheirOwner(t *testing.T) {
	t.Parallel() // a namespace and Leases of its own
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	const manager = "shard-children"
	cmGVR := corev1.SchemeGroupVersion.WithResource("configmaps")
	caches := map[string]*operatorpkg.SharedInformer{}
	replica := func(id string) *operatorpkg.Operator {
		t.Helper()
		config := shardConfig(env.Config(), ns, id)
		config.Sharding.Children = []schema.GroupVersionResource{cmGVR}
		op, err := operatorpkg.New(config)
		if err != nil {
			t.Fatal(err)
		}
		widgets, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		cms, err := op.Informer(informer.Config{GVR: cmGVR, Namespace: ns, ObjectType: &corev1.ConfigMap{},
			LabelSelector: child.LabelManagedBy + "=" + manager})
		if err != nil {
			t.Fatal(err)
		}
		caches[id] = cms
		r, err := child.New(child.Config[*unstructured.Unstructured, *corev1.ConfigMap]{
			Name:   "configmap",
			Client: child.Typed(op.Kubernetes().CoreV1().ConfigMaps),
			Cache:  cms,
			Desired: func(_ context.Context, w *unstructured.Unstructured) (*corev1.ConfigMap, error) {
				return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: w.GetName()}, Data: map[string]string{"owner": w.GetName()}}, nil
			},
			FieldManager: manager,
			OwnerLabels:  op.ShardLabels(),
			Writes:       op.OwnWrites(),
		})
		if err != nil {
			t.Fatal(err)
		}
		rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "", r)}})
		if err != nil {
			t.Fatal(err)
		}
		f, err := framework.New(framework.Config{Name: "widgets-" + id, Informer: widgets, ResourceRouter: rt,
			Client: op.Dynamic(), Resource: widgetGVR, Registerer: op.Registry(), Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Add(f); err != nil {
			t.Fatal(err)
		}
		if err := op.Owns(f, schema.GroupKind{Group: widgetGVR.Group, Kind: "Widget"}, cms); err != nil {
			t.Fatal(err)
		}
		return op
	}
	opA, opB := replica("a"), replica("b")
	stopA, _ := runOperator(opA)
	t.Cleanup(func() { _ = stopA() })
	stopB, _ := runOperator(opB)
	t.Cleanup(func() { _ = stopB() })

	const n = 20
	for i := range n {
		createWidget(t, newWidget(ns, fmt.Sprintf("w%d", i), "", nil))
	}
	kc := kubeClient(t)
	// shares reads each widget's shard from the server and checks its
	// ConfigMap carries the same one: the widget names by shard.
	shares := func(ctx context.Context) (map[string][]string, bool, error) {
		widgets, err := widgetClient(t, ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, false, err
		}
		cms, err := kc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: child.LabelManagedBy + "=" + manager})
		if err != nil {
			return nil, false, err
		}
		cmShard := map[string]string{}
		for _, cm := range cms.Items {
			cmShard[cm.Name] = cm.Labels[shardLabel]
		}
		byShard := map[string][]string{}
		for _, w := range widgets.Items {
			s := w.GetLabels()[shardLabel]
			if s == "" || cmShard[w.GetName()] != s {
				return nil, false, nil
			}
			byShard[s] = append(byShard[s], w.GetName())
		}
		return byShard, len(widgets.Items) == n, nil
	}
	// cached is the names in id's ConfigMap cache.
	cached := func(id string) []string {
		var names []string
		for _, obj := range caches[id].List() {
			names = append(names, obj.(*corev1.ConfigMap).Name)
		}
		slices.Sort(names)
		return names
	}
	var byShard map[string][]string
	poll(t, "every widget's ConfigMap with its widget's shard label, and each cache holding its replica's share", func(ctx context.Context) (bool, error) {
		s, ok, err := shares(ctx)
		if !ok || err != nil {
			return false, err
		}
		byShard = s
		for _, id := range []string{"a", "b"} {
			slices.Sort(s[id])
			if !slices.Equal(cached(id), s[id]) {
				return false, nil
			}
		}
		return true, nil
	})
	if len(byShard["a"]) == 0 || len(byShard["b"]) == 0 {
		t.Fatalf("widgets per shard: %v, want both replicas to have a share", byShard)
	}
	t.Logf("shares: a %d, b %d", len(byShard["a"]), len(byShard["b"]))

	// a stops: b gets every widget, relabels their ConfigMaps, and caches
	// them all.
	if err := stopA(); err != nil {
		t.Fatalf("replica a: Run() = %v, want nil", err)
	}
	poll(t, "every widget and ConfigMap moved to b, and in b's cache", func(ctx context.Context) (bool, error) {
		s, ok, err := shares(ctx)
		return ok && err == nil && len(s["b"]) == n && len(cached("b")) == n, err
	})
	if err := stopB(); err != nil {
		t.Fatalf("replica b: Run() = %v, want nil", err)
	}
}
