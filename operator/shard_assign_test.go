package operator

import (
	"testing"
	"time"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	metadatafake "k8s.io/client-go/metadata/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// TestAssignerCountsAMoveAcrossAPass: an object handed over by its owner
// (free again, not yet labelled for its new owner) when a pass lists the
// assigned objects is still a move: the pass must not forget its drain, or
// operatorkit_shard_moves_total and the hand-over histogram miss it. A
// second pass during hand-overs comes with every second change of
// members, as when two replicas join at once.
func TestAssignerCountsAMoveAcrossAPass(t *testing.T) {
	md := metadatafake.NewSimpleMetadataClient(runtime.NewScheme())
	md.PrependReactor("list", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &metav1.List{}, nil // nothing labelled: the object is free
	})
	md.PrependReactor("patch", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, &metav1.PartialObjectMetadata{}, nil
	})
	metrics, err := newShardMetrics(prometheus.NewRegistry(), "r", func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	s := &sharder{cfg: Sharding{Ring: "r", VirtualNodes: DefaultVirtualNodes}, shardLabel: ShardLabelPrefix + "r", drainLabel: DrainLabelPrefix + "r",
		assignMD: md, metrics: metrics, logger: log.NewNopLogger()}
	free := cache.NewSharedIndexInformer(&cache.ListWatch{}, &metav1.PartialObjectMetadata{}, 0, cache.Indexers{})
	a := &assigner{
		s:       s,
		sources: []assignSource{{gvr: thingsGVR, free: []cache.SharedIndexInformer{free}}},
		queue:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[assignRef]()),
		drains:  map[assignRef]time.Time{},
		found:   map[assignRef]objectState{},
	}
	defer a.queue.ShutDown()
	a.members = []string{"r1", "r2"}
	a.ring = newRing(a.members, DefaultVirtualNodes)
	// Drained a second ago, handed over since: free, waiting in the queue.
	ref := assignRef{source: 0, key: "ns/obj"}
	a.drains[ref] = time.Now().Add(-time.Second)
	if err := free.GetStore().Add(&metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "obj", ResourceVersion: "5"}}); err != nil {
		t.Fatal(err)
	}
	if err := a.pass(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := a.assignOne(t.Context(), ref); err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(metrics.moves); got != 1 {
		t.Errorf("operatorkit_shard_moves_total = %v after the hand-over, want 1", got)
	}
	var h dto.Metric
	if err := metrics.handover.(prometheus.Metric).Write(&h); err != nil {
		t.Fatal(err)
	}
	if got := h.GetHistogram().GetSampleCount(); got != 1 {
		t.Errorf("operatorkit_shard_handover_duration_seconds counted %d hand-overs, want 1", got)
	}
}
