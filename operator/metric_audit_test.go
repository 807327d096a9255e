package operator

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestShardOwnedObjectsAfterRun: operatorkit_shard_owned_objects counts the
// objects of the replica's sharded informers while they run; once Run
// returned they are stopped, as operatorkit_informer_cache_objects says (0),
// and the replica owns nothing: the gauge must not go on reporting the last
// content of their caches.
func TestShardOwnedObjectsAfterRun(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a", "ns/b")
	reg := prometheus.NewRegistry()
	o, err := New(Config{RESTConfig: cfg, Name: "op", Registry: reg, Sharding: &Sharding{Resources: []schema.GroupVersionResource{things}, Ring: "r"}})
	if err != nil {
		t.Fatal(err)
	}
	planFramework(t, o)
	owned := func() float64 {
		t.Helper()
		return testutil.ToFloat64(o.shard.metrics.owned)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- o.Run(ctx) }()
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return owned() == 2, nil
	}); err != nil {
		cancel()
		<-done
		t.Fatalf("operatorkit_shard_owned_objects while Run runs = %v, want 2", owned())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if v := owned(); v != 0 {
		t.Errorf("operatorkit_shard_owned_objects after Run returned = %v, want 0", v)
	}
}
