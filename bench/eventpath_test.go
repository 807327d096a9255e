package bench_test

import (
	"context"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/router"
)

// signalResource is a resource that does nothing but tell the benchmark
// that a worker ran it.
type signalResource struct{ done chan struct{} }

func (r *signalResource) Name() string { return "signal" }

func (r *signalResource) EnsureCreated(context.Context, any) error {
	r.done <- struct{}{}
	return nil
}

func (r *signalResource) EnsureDeleted(context.Context, any) error { return nil }

var _ resource.Interface = (*signalResource)(nil)

func configMap(name string, generation int64) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: "ns", Name: name, Generation: generation,
		ResourceVersion: strconv.FormatInt(generation, 10),
	}}
}

// bootFramework boots a Framework over a fake informer holding one object
// "ns/o", with finalizers disabled (no API server) and one signalResource.
// cfg's Name, Informer, ResourceRouter and DisableFinalizers are set here.
func bootFramework(b *testing.B, cfg framework.Config) (*framework.Framework, *informertest.Informer, chan struct{}) {
	b.Helper()
	done := make(chan struct{})
	inf := informertest.New(configMap("o", 1))
	set, err := router.NewResourceSet(router.ResourceSetConfig{
		Handles:   func(any) bool { return true },
		Resources: []resource.Interface{&signalResource{done: done}},
	})
	if err != nil {
		b.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		b.Fatal(err)
	}
	cfg.Name, cfg.Informer, cfg.ResourceRouter, cfg.DisableFinalizers = "bench", inf, rt, true
	f, err := framework.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := f.Boot(ctx); err != nil {
			b.Error(err)
		}
	})
	b.Cleanup(func() {
		cancel()
		// Drain a reconciliation that may still be signalling.
		go func() {
			for range done {
			}
		}()
		wg.Wait()
		close(done)
	})
	<-f.Booted()
	<-done // the initial add
	return f, inf, done
}

// BenchmarkEventToWorker measures the path of one informer update event
// (a new generation) through the Framework's handler, update predicate and
// work queue to a worker that runs the object's resource chain, one event at
// a time: the latency and the allocations of the Framework's own machinery
// around a no-op reconciliation. The informer is a fake, so decoding and
// caching are not included.
func BenchmarkEventToWorker(b *testing.B) {
	for _, tc := range []struct {
		name string
		cfg  framework.Config
	}{
		{name: "defaults", cfg: framework.Config{}},
		{name: "no-traces", cfg: framework.Config{TraceObjects: -1}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			_, inf, done := bootFramework(b, tc.cfg)
			objs := [2]*corev1.ConfigMap{configMap("o", 2), configMap("o", 3)}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// Alternate between two prepared generations, so that every
				// update passes the predicate and nothing is allocated here.
				objs[i%2].ResourceVersion = strconv.Itoa(i + 10)
				if err := inf.Update(objs[i%2]); err != nil {
					b.Fatal(err)
				}
				<-done
				i++
			}
		})
	}
}

// BenchmarkEnqueueToWorker is BenchmarkEventToWorker entered through
// Framework.Enqueue (how other watches wake an owner up, and what the
// benchmark's steady phase uses), without an informer event.
func BenchmarkEnqueueToWorker(b *testing.B) {
	f, _, done := bootFramework(b, framework.Config{})
	b.ReportAllocs()
	for b.Loop() {
		f.Enqueue("ns/o")
		<-done
	}
}

// BenchmarkWorkqueueToWorker is the floor of the two benchmarks above: a
// bare client-go rate-limited work queue and one worker that looks the key
// up in a map and signals, as the limit contender does.
func BenchmarkWorkqueueToWorker(b *testing.B) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	store := map[string]*corev1.ConfigMap{"ns/o": configMap("o", 1)}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			key, quit := q.Get()
			if quit {
				return
			}
			if _, ok := store[key]; ok {
				done <- struct{}{}
			}
			q.Forget(key)
			q.Done(key)
		}
	})
	b.Cleanup(func() {
		q.ShutDown()
		wg.Wait()
	})
	b.ReportAllocs()
	for b.Loop() {
		q.Add("ns/o")
		<-done
	}
}
