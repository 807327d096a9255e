package informer

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clienttesting "k8s.io/client-go/testing"
)

// TestCacheObjectsDeleteDeliveredTwice: client-go hands a DELETED that the
// watch delivers twice (a replay) to the event handlers twice, though the
// object left the store at the first. operatorkit_informer_cache_objects
// must still say how many objects the cache holds, and 0 once the informer
// stopped (the series itself stays, as New made it).
func TestCacheObjectsDeleteDeliveredTwice(t *testing.T) {
	a, b := widget("ns", "a", nil), widget("ns", "b", nil)
	client := newFakeClient(a, b)
	// The informer's first watch is one the test feeds; a later one (none
	// expected) goes to the fake tracker.
	fw := watch.NewFakeWithChanSize(2, false)
	watching := make(chan struct{})
	var once sync.Once
	client.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) {
		first := false
		once.Do(func() { first = true; close(watching) })
		if !first {
			return false, nil, nil
		}
		return true, fw, nil
	})
	reg := prometheus.NewRegistry()
	inf, err := New(Config{Client: client, GVR: widgets, Registerer: reg, Name: "twice"})
	if err != nil {
		t.Fatal(err)
	}
	if got := cacheObjectsOf(t, reg, "twice"); got != 0 {
		t.Errorf("cache_objects before Run = %v, want 0", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-watching:
	case <-time.After(30 * time.Second):
		t.Fatal("watch not started")
	}
	fw.Delete(a)
	fw.Delete(a) // the replay
	err = wait.PollUntilContextTimeout(ctx, time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return testutil.ToFloat64(inf.metrics.deletes) == 2, nil
	})
	if err != nil {
		t.Fatalf("deletes delivered to the handlers = %v, want 2", testutil.ToFloat64(inf.metrics.deletes))
	}
	if n := len(inf.List()); n != 1 {
		t.Fatalf("cached objects = %d, want 1", n)
	}
	if got := cacheObjectsOf(t, reg, "twice"); got != 1 {
		t.Errorf("cache_objects after a delete delivered twice = %v, want 1 (b)", got)
	}

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run() = %v", err)
	}
	if got := cacheObjectsOf(t, reg, "twice"); got != 0 {
		t.Errorf("cache_objects after the informer stopped = %v, want 0", got)
	}
	if n := len(inf.List()); n != 1 {
		t.Errorf("cached objects after stop = %d, want 1 (the cache keeps its content)", n)
	}
}

// cacheObjectsOf returns the value of the one cache_objects series of reg,
// which must be the informer name's.
func cacheObjectsOf(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "operatorkit_informer_cache_objects" {
			continue
		}
		ms := mf.GetMetric()
		if len(ms) != 1 || len(ms[0].GetLabel()) != 1 || ms[0].GetLabel()[0].GetValue() != name {
			t.Fatalf("cache_objects series = %v, want one of informer %q", ms, name)
		}
		return ms[0].GetGauge().GetValue()
	}
	t.Fatal("no cache_objects series")
	return 0
}

// TestCacheObjectsSharedName: informers that share a name share the
// cache_objects series, the sum of their caches while they run; one that
// stops takes only its own objects out.
func TestCacheObjectsSharedName(t *testing.T) {
	reg := prometheus.NewRegistry()
	run := func(client *fakeClient) context.CancelFunc {
		inf, err := New(Config{Client: client, GVR: widgets, Registerer: reg, Name: "shared"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- inf.Run(ctx) }()
		if err := inf.WaitForCacheSync(ctx); err != nil {
			t.Fatal(err)
		}
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run() = %v", err)
			}
		}
	}
	stopOne := run(newFakeClient(widget("ns", "a", nil)))
	stopTwo := run(newFakeClient(widget("ns", "b", nil), widget("ns", "c", nil)))
	defer stopTwo()
	if got := cacheObjectsOf(t, reg, "shared"); got != 3 {
		t.Errorf("cache_objects of two running informers = %v, want 3", got)
	}
	stopOne()
	if got := cacheObjectsOf(t, reg, "shared"); got != 2 {
		t.Errorf("cache_objects after one stopped = %v, want 2", got)
	}
}
