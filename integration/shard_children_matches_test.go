package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// TestShardingImmutableChildrenFollowTheirOwner: a Job child, which its
// resource's Matches says never needs a write (its pod template cannot
// change), follows its widget to another replica: the new owner, a release
// whose Desired has another image, relabels the Job for its shard (it then
// caches it) and never writes its spec, which the API server would refuse
// (422: the template is immutable).
func TestShardingImmutableChildrenFollowTheirOwner(t *testing.T) {
	t.Parallel() // a namespace and Leases of its own
	ns := newNamespace(t)
	ensureWidgetCRD(t)
	const manager = "shard-jobs"
	jobGVR := batchv1.SchemeGroupVersion.WithResource("jobs")
	caches := map[string]*operatorpkg.SharedInformer{}
	replica := func(id, image string) *operatorpkg.Operator {
		t.Helper()
		config := shardConfig(env.Config(), ns, id)
		config.Sharding.Children = []schema.GroupVersionResource{jobGVR}
		op, err := operatorpkg.New(config)
		if err != nil {
			t.Fatal(err)
		}
		widgets, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: ns})
		if err != nil {
			t.Fatal(err)
		}
		jobs, err := op.Informer(informer.Config{GVR: jobGVR, Namespace: ns, ObjectType: &batchv1.Job{},
			LabelSelector: child.LabelManagedBy + "=" + manager})
		if err != nil {
			t.Fatal(err)
		}
		caches[id] = jobs
		r, err := child.New(child.Config[*unstructured.Unstructured, *batchv1.Job]{
			Name:   "job",
			Client: child.Typed(op.Kubernetes().BatchV1().Jobs),
			Cache:  jobs,
			Desired: func(_ context.Context, w *unstructured.Unstructured) (*batchv1.Job, error) {
				return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: w.GetName()}, Spec: batchv1.JobSpec{
					Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "step", Image: image}},
					}},
				}}, nil
			},
			Matches:      func(_, _ *batchv1.Job) bool { return true },
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
			Client: op.Dynamic(), Resource: widgetGVR, Registerer: op.Registry(), Workers: 2,
			Logger: level.NewFilter(log.LoggerFunc(func(kv ...any) error { t.Log(kv...); return nil }), level.AllowError())})
		if err != nil {
			t.Fatal(err)
		}
		if err := op.Add(f); err != nil {
			t.Fatal(err)
		}
		if err := op.Owns(f, schema.GroupKind{Group: widgetGVR.Group, Kind: "Widget"}, jobs); err != nil {
			t.Fatal(err)
		}
		return op
	}
	kc := kubeClient(t)
	// jobs returns the image and shard label of each Job by name.
	jobs := func(ctx context.Context) (map[string][2]string, error) {
		list, err := kc.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{LabelSelector: child.LabelManagedBy + "=" + manager})
		if err != nil {
			return nil, err
		}
		out := map[string][2]string{}
		for _, j := range list.Items {
			out[j.Name] = [2]string{j.Spec.Template.Spec.Containers[0].Image, j.Labels[shardLabel]}
		}
		return out, nil
	}
	cached := func(id string) []string {
		var names []string
		for _, obj := range caches[id].List() {
			names = append(names, obj.(*batchv1.Job).Name)
		}
		slices.Sort(names)
		return names
	}

	// a alone: every widget's Job, image v1, labelled for a.
	stopA, _ := runOperator(replica("a", "example.com/step:v1"))
	t.Cleanup(func() { _ = stopA() })
	const n = 6
	var names []string
	for i := range n {
		name := fmt.Sprintf("w%d", i)
		names = append(names, name)
		createWidget(t, newWidget(ns, name, "", nil))
	}
	all := func(ctx context.Context, image, shard string) (bool, error) {
		js, err := jobs(ctx)
		if err != nil || len(js) != n {
			return false, err
		}
		for _, j := range js {
			if j != [2]string{image, shard} {
				return false, nil
			}
		}
		return true, nil
	}
	poll(t, "every widget's Job, image v1, labelled for a", func(ctx context.Context) (bool, error) {
		return all(ctx, "example.com/step:v1", "a")
	})

	// b, a release whose Jobs have another image, joins, and a stops: b
	// owns every widget, and relabels their Jobs without writing a spec.
	stopB, _ := runOperator(replica("b", "example.com/step:v2"))
	t.Cleanup(func() { _ = stopB() })
	if err := stopA(); err != nil {
		t.Fatalf("replica a: Run() = %v, want nil", err)
	}
	var last map[string][2]string
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("jobs (image, shard): %v; b caches %v", last, cached("b"))
		}
	})
	poll(t, "every Job labelled for b, in b's cache, its image still v1", func(ctx context.Context) (bool, error) {
		last, _ = jobs(ctx)
		ok, err := all(ctx, "example.com/step:v1", "b")
		return ok && err == nil && slices.Equal(cached("b"), names), err
	})
	if err := stopB(); err != nil {
		t.Fatalf("replica b: Run() = %v, want nil", err)
	}
}
