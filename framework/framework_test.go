package framework

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/goleak"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/crdclient"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
	"github.com/operatorkit/operatorkit/trace"
)

func object(name string, generation int64, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("test.operatorkit.io/v1")
	u.SetKind("Thing")
	u.SetNamespace("ns")
	u.SetName(name)
	u.SetGeneration(generation)
	u.SetResourceVersion(fmt.Sprint(generation))
	u.SetLabels(labels)
	return u
}

// funcResource is a resource.Interface whose EnsureCreated runs create.
type funcResource struct {
	name   string
	create func(ctx context.Context, obj any) error
	calls  atomic.Int64
}

func (r *funcResource) Name() string { return r.name }
func (r *funcResource) EnsureCreated(ctx context.Context, obj any) error {
	r.calls.Add(1)
	if r.create == nil {
		return nil
	}
	return r.create(ctx, obj)
}
func (r *funcResource) EnsureDeleted(ctx context.Context, obj any) error { return nil }

var _ resource.Interface = (*funcResource)(nil)

func testRouter(t *testing.T, handles func(obj any) bool, resources ...resource.Interface) *router.Router {
	t.Helper()
	if handles == nil {
		handles = func(any) bool { return true }
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: handles, Resources: resources})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func fastBackOff() backoff.BackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.RandomizationFactor, b.MaxElapsedTime = time.Millisecond, 20*time.Millisecond, 0, 0
	b.Reset()
	return b
}

// boot runs f.Boot until the test ends and checks that it returns nil.
func boot(t *testing.T, f *Framework) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Boot() = %v, want nil", err)
		}
	})
	select {
	case <-f.Booted():
	case err := <-done:
		t.Fatalf("Boot returned early: %v", err)
	}
}

func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

func TestNewValidatesConfig(t *testing.T) {
	inf := informertest.New()
	rt := testRouter(t, nil, &funcResource{name: "r"})
	valid := Config{Name: "op", Informer: inf, ResourceRouter: rt, DisableFinalizers: true}
	tests := []struct {
		name   string
		mutate func(*Config)
		field  string
	}{
		{"missing name", func(c *Config) { c.Name = "" }, "Name"},
		{"name not a finalizer", func(c *Config) { c.Name = "Bad Name!" }, "Name"},
		{"missing informer", func(c *Config) { c.Informer = nil }, "Informer"},
		{"nil pointer informer", func(c *Config) { c.Informer = (*informer.Informer)(nil) }, "Config.Informer is a nil *informer.Informer"},
		{"nil pointer client", func(c *Config) {
			c.DisableFinalizers, c.Client = false, (*dynamic.DynamicClient)(nil)
			c.Resource = schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "widgets"}
		}, "Config.Client is a nil *dynamic.DynamicClient"},
		{"nil pointer event recorder", func(c *Config) { c.EventRecorder = (*record.FakeRecorder)(nil) }, "Config.EventRecorder"},
		{"nil pointer rate limiter", func(c *Config) { c.RateLimiter = (*workqueue.TypedBucketRateLimiter[string])(nil) }, "Config.RateLimiter"},
		{"backoff factory makes nil", func(c *Config) { c.BackOffFactory = func() backoff.BackOff { return nil } }, "Config.BackOffFactory returned a nil"},
		{"backoff factory settles at 0", func(c *Config) {
			c.BackOffFactory = func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) }
		}, "Config.BackOffFactory's *backoff.backOffTries settles at 0s between retries"},
		{"backoff factory never waits", func(c *Config) { c.BackOffFactory = func() backoff.BackOff { return &backoff.ZeroBackOff{} } }, "settles at 0s"},
		{"backoff factory shares one backoff", func(c *Config) {
			shared := backoff.NewExponentialBackOff()
			c.BackOffFactory = func() backoff.BackOff { return shared }
		}, "Config.BackOffFactory returned the same *backoff.ExponentialBackOff twice"},
		{"registerer with another collector of a metric's name", func(c *Config) {
			reg := prometheus.NewRegistry()
			reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: metricReconciliations, Help: "Someone else's."}))
			c.Registerer = reg
		}, "Config.Registerer"},
		{"nil pointer logger", func(c *Config) { c.Logger = (*nilLogger)(nil) }, "Config.Logger"},
		{"missing router", func(c *Config) { c.ResourceRouter = nil }, "ResourceRouter"},
		{"missing client with finalizers", func(c *Config) { c.DisableFinalizers = false }, "Client"},
		{"metadata client without resource", func(c *Config) {
			c.DisableFinalizers, c.MetadataClient = false, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
		}, "Resource"},
		{"resource without version", func(c *Config) {
			c.DisableFinalizers, c.MetadataClient = false, metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
			c.Resource = schema.GroupVersionResource{Group: "g", Resource: "widgets"}
		}, "Config.Resource \"g/, Resource=widgets\" needs a version"},
		{"resource not the informer's", func(c *Config) {
			gvr := schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "gadgets"}
			dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "GadgetList"})
			inf, err := informer.New(informer.Config{Client: dc, GVR: gvr})
			if err != nil {
				t.Fatal(err)
			}
			c.Informer, c.DisableFinalizers, c.Client = inf, false, dc
			c.Resource = schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "widgets"}
		}, `framework.Config.Resource "widgets.g" is not the resource of Informer, "gadgets.g"`},
		{"crd of another resource", func(c *Config) {
			c.CRD, c.CRDClient = gadgetsCRD(), &crdclient.CRDClient{}
			c.Resource = schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}
		}, `framework.Config.CRD gadgets.test.operatorkit.io is of resource "gadgets.test.operatorkit.io", not of Resource "things.test.operatorkit.io"`},
		{"crd of another group", func(c *Config) {
			c.CRD, c.CRDClient = gadgetsCRD(), &crdclient.CRDClient{}
			c.Resource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}
		}, `framework.Config.CRD gadgets.test.operatorkit.io is of resource "gadgets.test.operatorkit.io", not of Resource "gadgets.example.com"`},
		{"crd not serving the version", func(c *Config) {
			c.CRD, c.CRDClient = gadgetsCRD(), &crdclient.CRDClient{}
			c.Resource = schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "gadgets"}
		}, `framework.Config.CRD gadgets.test.operatorkit.io does not serve the version "v1" of Resource (served: v1beta1)`},
		{"crd without client", func(c *Config) { c.CRD = widgetLikeCRD() }, "CRDClient"},
		{"migrate storage without crd", func(c *Config) { c.MigrateStorage = true }, "framework.Config.CRD must not be empty when MigrateStorage is set"},
		{"migrate storage to another version than Resource's", func(c *Config) {
			c.CRD, c.CRDClient, c.MigrateStorage = gadgetsCRD(), &crdclient.CRDClient{}, true
			c.CRD.Spec.Versions = append(c.CRD.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v1alpha1", Served: true})
			c.Resource = schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1alpha1", Resource: "gadgets"}
		}, `framework.Config.Resource is version "v1alpha1" of gadgets.test.operatorkit.io, but MigrateStorage moves its objects to the storage version "v1beta1"`},
		{"negative workers", func(c *Config) { c.Workers = -1 }, "Workers"},
		{"workers that fill the memory", func(c *Config) { c.Workers = math.MaxInt }, "Workers"},
		{"negative timeout", func(c *Config) { c.ReconcileTimeout = -time.Second }, "ReconcileTimeout"},
		{"field manager not UTF-8", func(c *Config) { c.FieldManager = "op\xff" }, `framework.Config.FieldManager "op\xff" must be at most 128 bytes of printable UTF-8`},
		{"negative traces per object", func(c *Config) { c.TracesPerObject = -1 }, "framework.Config.TracesPerObject must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := valid
			tt.mutate(&c)
			_, err := New(c)
			if !errors.Is(err, ErrInvalidConfig) || !IsInvalidConfig(err) {
				t.Fatalf("New() error = %v, want ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Fatalf("New() error = %q, want it to name %s", err, tt.field)
			}
		})
	}
	if _, err := New(valid); err != nil {
		t.Fatalf("New(valid) = %v", err)
	}
	nilRegistry := valid
	nilRegistry.Registerer = (*prometheus.Registry)(nil) // registers nothing, as nil does
	if _, err := New(nilRegistry); err != nil {
		t.Fatalf("New(Registerer: a nil *prometheus.Registry) = %v", err)
	}
	withMeta := valid
	withMeta.DisableFinalizers = false
	withMeta.MetadataClient = metadatafake.NewSimpleMetadataClient(metadatafake.NewTestScheme())
	withMeta.Resource = schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "widgets"}
	if _, err := New(withMeta); err != nil {
		t.Fatalf("New(finalizers through MetadataClient alone) = %v", err)
	}
}

// nilLogger is a logger whose nil pointer panics.
type nilLogger struct{ prefix string }

func (l *nilLogger) Log(...any) error { _ = l.prefix; return nil }

func TestDefaultUpdatePredicate(t *testing.T) {
	base := object("a", 1, map[string]string{"l": "1"})
	with := func(f func(u *unstructured.Unstructured)) *unstructured.Unstructured {
		u := base.DeepCopy()
		u.SetResourceVersion("99")
		f(u)
		return u
	}
	now := metav1.Now()
	tests := []struct {
		name string
		new  *unstructured.Unstructured
		want bool
	}{
		{"resync (same resourceVersion)", base.DeepCopy(), true},
		{"status or finalizer write only", with(func(u *unstructured.Unstructured) { u.SetFinalizers([]string{"x"}) }), false},
		{"spec change bumps generation", with(func(u *unstructured.Unstructured) { u.SetGeneration(2) }), true},
		{"label change", with(func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"l": "2"}) }), true},
		{"annotation change", with(func(u *unstructured.Unstructured) { u.SetAnnotations(map[string]string{"a": "b"}) }), true},
		{"deletion starts", with(func(u *unstructured.Unstructured) { u.SetDeletionTimestamp(&now) }), true},
		{"no generation tracking", with(func(u *unstructured.Unstructured) { u.SetGeneration(0) }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DefaultUpdatePredicate(base, tt.new); got != tt.want {
				t.Fatalf("DefaultUpdatePredicate() = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestPanicIsRecoveredCountedAndRetried: a resource that panics for one
// object is recovered, counted, retried with backoff until it stops
// panicking; another object converges meanwhile.
func TestPanicIsRecoveredCountedAndRetried(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered, so it runs after Boot has stopped
	var panics atomic.Int64
	var okCalls sync.Map
	r := &funcResource{name: "fragile", create: func(ctx context.Context, obj any) error {
		u := obj.(*unstructured.Unstructured)
		if u.GetName() == "bad" && panics.Add(1) <= 3 {
			panic("boom")
		}
		okCalls.Store(u.GetName(), true)
		return nil
	}}
	inf := informertest.New(object("bad", 1, nil), object("good", 1, nil))
	reg := prometheus.NewRegistry()
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, Registerer: reg, BackOffFactory: fastBackOff, TracesPerObject: 16})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "both objects reconciled", func() bool {
		_, bad := okCalls.Load("bad")
		_, good := okCalls.Load("good")
		return bad && good
	})
	if got := testutil.ToFloat64(f.metrics.panics); got != 3 {
		t.Errorf("panics counted = %v, want 3", got)
	}
	trs := f.Traces("ns/bad")
	if len(trs) == 0 || trs[len(trs)-1].Result != ResultSuccess {
		t.Fatalf("traces of bad = %+v, want last success", trs)
	}
	var sawPanic bool
	for _, tr := range trs {
		if tr.Result == ResultPanic && strings.Contains(tr.Error, "boom") {
			sawPanic = true
		}
	}
	if !sawPanic {
		t.Errorf("no trace with result panic among %+v", trs)
	}
}

// TestNoResourceSetIsNotRetriedHot: an object no set handles is reconciled
// once per change, not retried.
func TestNoResourceSetIsNotRetriedHot(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered, so it runs after Boot has stopped
	r := &funcResource{name: "r"}
	handles := func(obj any) bool { return obj.(*unstructured.Unstructured).GetName() != "stray" }
	inf := informertest.New(object("stray", 1, nil), object("ok", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, handles, r), DisableFinalizers: true, BackOffFactory: fastBackOff})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "ok reconciled", func() bool { return r.calls.Load() >= 1 })
	pollUntil(t, "stray reconciled", func() bool { return trace.Reconciliations(f.Traces("ns/stray")) >= 1 })
	// Give a hot loop every chance to show: the queue must stay empty.
	pollUntil(t, "queue empty", func() bool { return f.queue.Len() == 0 })
	if n := trace.Reconciliations(f.Traces("ns/stray")); n != 1 {
		t.Fatalf("reconciliations of stray = %d, want 1", n)
	}
	if got := f.Traces("ns/stray")[0]; got.Result != ResultNoResourceSet || !IsNoResourceSet(errors.New(got.Error)) && !strings.Contains(got.Error, "no resource set") {
		t.Fatalf("stray trace = %+v, want no_resource_set", got)
	}
}

// TestUpdatesCoalesce: many updates of one object while a reconciliation
// runs end in few reconciliations, never two at once for one object.
func TestUpdatesCoalesce(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered, so it runs after Boot has stopped
	var running, maxRunning, calls atomic.Int64
	release := make(chan struct{})
	r := &funcResource{name: "slow", create: func(ctx context.Context, obj any) error {
		if n := running.Add(1); n > maxRunning.Load() {
			maxRunning.Store(n)
		}
		defer running.Add(-1)
		if calls.Add(1) == 1 {
			<-release
		}
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, Workers: 4})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "first reconciliation running", func() bool { return running.Load() == 1 })
	for g := int64(2); g < 50; g++ {
		if err := inf.Update(object("a", g, nil)); err != nil {
			t.Fatal(err)
		}
	}
	close(release)
	pollUntil(t, "second reconciliation", func() bool { return calls.Load() >= 2 && f.queue.Len() == 0 && running.Load() == 0 })
	if got := calls.Load(); got != 2 {
		t.Errorf("reconciliations = %d, want 2 (48 updates coalesced into one)", got)
	}
	if maxRunning.Load() != 1 {
		t.Errorf("max concurrent reconciliations of one object = %d, want 1", maxRunning.Load())
	}
}

// TestTimeoutEndsHungReconciliation: a resource that hangs is ended by the
// reconcile timeout, counted as an error, and retried; workers stay free.
func TestTimeoutEndsHungReconciliation(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered, so it runs after Boot has stopped
	var hung atomic.Int64
	r := &funcResource{name: "hang", create: func(ctx context.Context, obj any) error {
		if obj.(*unstructured.Unstructured).GetName() == "stuck" && hung.Add(1) <= 2 {
			<-ctx.Done()
			return ctx.Err()
		}
		return nil
	}}
	inf := informertest.New(object("stuck", 1, nil), object("free", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, Workers: 1, ReconcileTimeout: 50 * time.Millisecond, BackOffFactory: fastBackOff, TracesPerObject: 16})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "stuck succeeds after timeouts", func() bool {
		trs := f.Traces("ns/stuck")
		return len(trs) > 0 && trs[len(trs)-1].Result == ResultSuccess
	})
	pollUntil(t, "free reconciled", func() bool { return len(f.Traces("ns/free")) > 0 })
	var timeouts int
	for _, tr := range f.Traces("ns/stuck") {
		if tr.Result == ResultError && strings.Contains(tr.Error, "deadline exceeded") {
			timeouts += 1 + tr.Repeats // two in a row are one trace (Fold)
		}
	}
	if timeouts != 2 {
		t.Errorf("timed-out reconciliations = %d, want 2", timeouts)
	}
}

// TestTraceStoreStaysWithinCap: 10,000 failing objects never grow the store
// past its caps.
func TestTraceStoreStaysWithinCap(t *testing.T) {
	s := newTraceStore(100, 3)
	for i := 0; i < 10000; i++ {
		for j := 0; j < 5; j++ {
			tr := &trace.Trace{Object: fmt.Sprint(i)}
			ctx := trace.NewContext(context.Background(), tr)
			for k := 0; k < MaxStepsPerTrace+10; k++ {
				trace.Record(ctx, "r", "step", time.Now(), trace.OutcomeDone, nil)
			}
			tr.Finish(ResultError, 0, fmt.Errorf("failure %d", j)) // not folded into the one before
			s.add(fmt.Sprint(i), tr)
		}
	}
	if s.len() != 100 {
		t.Fatalf("objects kept = %d, want 100", s.len())
	}
	if _, ok := s.byKey["0"]; ok {
		t.Fatal("the least recently reconciled object was not dropped")
	}
	traces, _ := s.get("9999")
	if len(traces) != 3 {
		t.Fatalf("traces kept for one object = %d, want 3", len(traces))
	}
	if n := len(traces[0].Steps); n != MaxStepsPerTrace {
		t.Fatalf("steps kept in one trace = %d, want %d", n, MaxStepsPerTrace)
	}
}

// TestTraceStoreFoldsRepeats: traces that went the way the object's last
// one went are folded into it, so that a run of no-ops keeps one place and
// the different traces before it stay.
func TestTraceStoreFoldsRepeats(t *testing.T) {
	s := newTraceStore(10, 3)
	start := time.Unix(1000, 0)
	var kept []bool
	add := func(result, step string, err error) *trace.Trace {
		start = start.Add(time.Second)
		tr := trace.New("ns/a", start)
		ctx := trace.NewContext(context.Background(), tr)
		trace.Record(ctx, "r", step, start, trace.OutcomeDone, nil)
		tr.Finish(result, 0, err)
		kept = append(kept, s.add("ns/a", tr))
		return tr
	}
	results := func() (out []string) {
		traces, _ := s.get("ns/a")
		for _, tr := range traces {
			out = append(out, fmt.Sprintf("%s/%s/%d", tr.Result, tr.Steps[0].Step, tr.Repeats))
		}
		return out
	}
	add(ResultSuccess, "create", nil)
	add(ResultError, "update", errors.New("conflict"))
	firstStart := add(ResultSuccess, "no-op", nil).Start
	for range 9 {
		add(ResultSuccess, "no-op", nil)
	}
	want := []string{"success/create/0", "error/update/0", "success/no-op/9"}
	if got := results(); !slices.Equal(got, want) {
		t.Fatalf("traces after 10 no-ops = %v, want %v", got, want)
	}
	// add reports the ones it keeps (the caller compacts them) and the
	// folded ones (the caller releases their step buffers).
	if want := append([]bool{true, true, true}, make([]bool, 9)...); !slices.Equal(kept, want) {
		t.Fatalf("add reported kept = %v, want %v", kept, want)
	}
	traces, _ := s.get("ns/a")
	last := traces[2]
	if !last.FirstStart.Equal(firstStart) || !last.Start.Equal(start) {
		t.Errorf("folded trace: FirstStart %v Start %v, want %v and %v (the first and the last no-op)", last.FirstStart, last.Start, firstStart, start)
	}
	if sums := s.summaries(); len(sums) != 1 || sums[0].Repeats != 9 || !sums[0].Start.Equal(start) {
		t.Errorf("summaries = %+v, want one with Repeats 9 and the last no-op's Start", sums)
	}
	var b strings.Builder
	formatTrace(&b, last)
	if !strings.Contains(b.String(), "repeated=9 since=") {
		t.Errorf("text form of the folded trace has no repeat count:\n%s", b.String())
	}

	// An error with another message is another trace; the oldest goes.
	add(ResultError, "update", errors.New("conflict"))
	add(ResultError, "update", errors.New("timeout"))
	want = []string{"success/no-op/9", "error/update/0", "error/update/0"}
	if got := results(); !slices.Equal(got, want) {
		t.Fatalf("traces after two different errors = %v, want %v", got, want)
	}
}

// TestTraceStoreRecyclesDroppedTraces: a store that cycles through more
// objects than it holds (a resync of 1,000 objects with room for 100)
// keeps the most recent ones, each trace with exactly its own steps, and
// allocates no new steps for them: each kept trace moves into the steps of
// the one it pushes out.
func TestTraceStoreRecyclesDroppedTraces(t *testing.T) {
	s := newTraceStore(100, 3)
	start := time.Unix(1000, 0)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprint("ns/o", i)
	}
	reconcile := func(i int) *trace.Trace {
		key := keys[i]
		tr := trace.NewSized(key, start, 16)
		ctx := trace.NewContext(context.Background(), tr)
		for _, step := range []string{"current", "desired", "patch"} {
			trace.Record(ctx, "r", step, start, trace.OutcomeDone, nil)
		}
		tr.Finish(ResultSuccess, 0, nil)
		if !s.add(key, tr) {
			tr.Release()
		}
		return tr
	}
	for i := range 1000 {
		reconcile(i)
	}
	var i int
	allocs := testing.AllocsPerRun(1000, func() {
		reconcile(i % 1000)
		i++
	})
	// NewSized's Trace and NewContext's context: nothing for the kept
	// steps (the race detector's pool drops some buffers, hence the
	// margin).
	if allocs >= 2.6 {
		t.Errorf("a reconciliation cycling through the store allocates %.1f times, want about 2 (the kept steps are not recycled)", allocs)
	}
	for i := range 1000 {
		reconcile(i)
	}
	// Successes: quiet objects, which take half of the places.
	if s.len() != 50 {
		t.Fatalf("objects kept = %d, want 50", s.len())
	}
	if _, ok := s.byKey["ns/o949"]; ok {
		t.Fatal("the least recently reconciled object was not dropped")
	}
	for _, key := range []string{"ns/o950", "ns/o999"} {
		traces, _ := s.get(key)
		if len(traces) != 1 || len(traces[0].Steps) != 3 || traces[0].Object != key || traces[0].Steps[2].Step != "patch" {
			t.Fatalf("traces of %s = %+v, want its one trace of 3 steps", key, traces)
		}
	}
}

func TestDebugHandler(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // first registered, so it runs after Boot has stopped
	r := &funcResource{name: "r", create: func(ctx context.Context, obj any) error {
		trace.Record(ctx, "r", "ensure created", time.Now(), trace.OutcomeDone, nil)
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "a reconciled", func() bool { return len(f.Traces("ns/a")) > 0 })
	srv := httptest.NewServer(f.DebugHandler())
	defer srv.Close()
	get := func(path, accept string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get(DebugPath, ""); code != 200 || !strings.Contains(body, `"object": "ns/a"`) || !strings.Contains(body, `"result": "success"`) {
		t.Errorf("list = %d %s", code, body)
	}
	if code, body := get(DebugPath+"/ns/a", "text/plain"); code != 200 || !strings.Contains(body, "ensure created") || !strings.Contains(body, "result=success") {
		t.Errorf("object text = %d %s", code, body)
	}
	if code, _ := get(DebugPath+"/ns/missing", ""); code != http.StatusNotFound {
		t.Errorf("missing object = %d, want 404", code)
	}
	srv.Client().CloseIdleConnections()
}

// BenchmarkEventToWorker measures the path of one update event through the
// predicate, the queue and a worker to a reconciliation of one no-op
// resource, end to end.
func BenchmarkEventToWorker(b *testing.B) {
	done := make(chan struct{}, 1)
	r := &funcResource{name: "noop", create: func(ctx context.Context, obj any) error {
		done <- struct{}{}
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	set, _ := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: []resource.Interface{r}})
	rt, _ := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: rt, DisableFinalizers: true})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- f.Boot(ctx) }()
	<-f.Booted()
	<-done // initial add
	objs := make([]*unstructured.Unstructured, b.N)
	for i := range objs {
		objs[i] = object("a", int64(i+2), nil)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_ = inf.Update(objs[i])
		<-done
	}
	b.StopTimer()
	cancel()
	<-stopped
}

// gadgetsCRD is the CRD of gadgets.test.operatorkit.io, serving v1beta1
// and no longer v1.
func gadgetsCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "gadgets.test.operatorkit.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "test.operatorkit.io",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Gadget"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: false}, {Name: "v1beta1", Served: true, Storage: true},
			},
		},
	}
}

func widgetLikeCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "things.test.operatorkit.io"}}
}

// TestEventsOnFailureAndRecovery: a failure records a Warning event; the
// first success after it, even after a permanent error that was not
// retried, records a Normal Recovered event.
func TestEventsOnFailureAndRecovery(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	r := &funcResource{name: "picky", create: func(ctx context.Context, obj any) error {
		if obj.(*unstructured.Unstructured).GetLabels()["fixed"] != "true" {
			return retry.Permanent(errors.New("spec.image must not be empty"))
		}
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	rec := record.NewFakeRecorder(10)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, EventRecorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	if got := <-rec.Events; !strings.HasPrefix(got, "Warning ReconcileFailed") || !strings.Contains(got, "spec.image must not be empty") {
		t.Fatalf("first event = %q, want a Warning ReconcileFailed saying why", got)
	}
	if err := inf.Update(object("a", 2, map[string]string{"fixed": "true"})); err != nil {
		t.Fatal(err)
	}
	if got := <-rec.Events; !strings.HasPrefix(got, "Normal Recovered") {
		t.Fatalf("event after the fix = %q, want Normal Recovered", got)
	}
	if n := r.calls.Load(); n != 2 {
		t.Fatalf("reconciliations = %d, want 2 (the permanent error is not retried)", n)
	}
}

// TestEventMessageCutAtARune: a message longer than an Event's is cut,
// and not inside a UTF-8 character: a cut one byte into a two-byte
// character left invalid UTF-8 in the Event.
func TestEventMessageCutAtARune(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{in: "short", want: "short"},
		{in: strings.Repeat("x", 1024), want: strings.Repeat("x", 1024)},
		{in: strings.Repeat("x", 1025), want: strings.Repeat("x", 1024) + "..."},
		{in: strings.Repeat("x", 1023) + "é and more", want: strings.Repeat("x", 1023) + "..."},
		{in: strings.Repeat("x", 1022) + "€ and more", want: strings.Repeat("x", 1022) + "..."},
	} {
		got := eventMessage(tt.in)
		if got != tt.want || !utf8.ValidString(got) {
			t.Errorf("eventMessage(%d bytes ending %q) = %d bytes ending %q (valid UTF-8: %t), want %d bytes ending %q",
				len(tt.in), tt.in[max(0, len(tt.in)-12):], len(got), got[max(0, len(got)-12):], utf8.ValidString(got), len(tt.want), tt.want[max(0, len(tt.want)-12):])
		}
	}
}

// TestDeleteChainRunsOnceAfterFinalizerRemoved: once the Framework removed
// its finalizer, a stale cache that still shows it (a child's event came
// first) does not run the delete chain again.
func TestDeleteChainRunsOnceAfterFinalizerRemoved(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var deletes atomic.Int64
	r := &deleteCounter{n: &deletes}
	obj := object("gone", 1, nil)
	now := metav1.Now()
	obj.SetDeletionTimestamp(&now)
	obj.SetFinalizers([]string{FinalizerPrefix + "op"})
	gvr := schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"}, obj.DeepCopy())
	inf := informertest.New(obj)
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), Client: dc, Resource: gvr})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the delete chain and the finalizer removal", func() bool {
		trs := f.Traces("ns/gone")
		return len(trs) == 1 && trs[0].Result == ResultSuccess
	})
	got, err := dc.Resource(gvr).Namespace("ns").Get(context.Background(), "gone", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.GetFinalizers()) != 0 {
		t.Fatalf("finalizers after the delete chain = %v, want none", got.GetFinalizers())
	}
	f.Enqueue("ns/gone") // the cache still has the object with our finalizer
	pollUntil(t, "the second reconciliation", func() bool { return len(f.Traces("ns/gone")) == 2 })
	if res := f.Traces("ns/gone")[1].Result; res != ResultSkipped {
		t.Fatalf("second reconciliation result = %q, want %q", res, ResultSkipped)
	}
	if n := deletes.Load(); n != 1 {
		t.Fatalf("EnsureDeleted calls = %d, want 1", n)
	}
	if !slices.ContainsFunc(f.Traces("ns/gone")[0].Steps, func(st trace.Step) bool {
		return st.Resource == "framework" && st.Step == StepRemoveFinalizer && st.Outcome == trace.OutcomeDone
	}) {
		t.Errorf("the delete chain's trace %+v has no %q step", f.Traces("ns/gone")[0].Steps, StepRemoveFinalizer)
	}
}

// TestFinalizerStepsInTheTrace: the Framework's finalizer patch is a step of
// the reconciliation's trace, before the chain; when it fails, the trace
// and operatorkit_framework_errors_total name it.
func TestFinalizerStepsInTheTrace(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	gvr := schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}
	for _, fail := range []bool{false, true} {
		obj := object("a", 1, nil)
		dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"}, obj.DeepCopy())
		if fail {
			dc.PrependReactor("patch", "things", func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("the API server is on fire")
			})
		}
		reg := prometheus.NewRegistry()
		f, err := New(Config{Name: "op", Informer: informertest.New(obj), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}), Client: dc, Resource: gvr, Registerer: reg})
		if err != nil {
			t.Fatal(err)
		}
		boot(t, f)
		pollUntil(t, "a reconciled", func() bool { return len(f.Traces("ns/a")) > 0 })
		steps := f.Traces("ns/a")[0].Steps
		want := trace.OutcomeDone
		if fail {
			want = trace.OutcomeError
		}
		if len(steps) == 0 || steps[0].Resource != "framework" || steps[0].Step != StepAddFinalizer || steps[0].Outcome != want {
			t.Errorf("fail=%v: steps %+v, want the first %q by framework, %s", fail, steps, StepAddFinalizer, want)
		}
		got := testutil.ToFloat64(f.metrics.errors.WithLabelValues("framework", StepAddFinalizer))
		if wantErrors := map[bool]float64{false: 0, true: 1}[fail]; got < wantErrors || !fail && got != 0 {
			t.Errorf("fail=%v: errors_total{resource=framework, step=%q} = %v, want %v", fail, StepAddFinalizer, got, wantErrors)
		}
	}
}

type deleteCounter struct{ n *atomic.Int64 }

func (d *deleteCounter) Name() string                                   { return "counter" }
func (d *deleteCounter) EnsureCreated(context.Context, any) error       { return nil }
func (d *deleteCounter) EnsureDeleted(ctx context.Context, _ any) error { d.n.Add(1); return nil }

// TestStaleCacheWaitsForOwnWrite: after a resource wrote the object
// (resourceversioncontext), a reconciliation that would read the object as
// it was before the write is deferred, and runs once the cache shows it.
func TestStaleCacheWaitsForOwnWrite(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var calls atomic.Int64
	r := &funcResource{name: "status", create: func(ctx context.Context, obj any) error {
		calls.Add(1)
		resourceversioncontext.SetResourceVersion(ctx, "7") // as a status patch would return
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, TracesPerObject: 16})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "first reconciliation", func() bool { return len(f.Traces("ns/a")) == 1 })

	f.Enqueue("ns/a") // a child's event; the cache still has resourceVersion 1
	pollUntil(t, "deferred reconciliation", func() bool { return len(f.Traces("ns/a")) == 2 })
	if got := f.Traces("ns/a")[1].Result; got != ResultStale {
		t.Fatalf("second reconciliation = %q, want %q", got, ResultStale)
	}
	if n := calls.Load(); n != 1 {
		t.Fatalf("resource calls = %d, want 1 (the stale object must not reach the chain)", n)
	}

	caughtUp := object("a", 1, nil)
	caughtUp.SetResourceVersion("7")
	if err := inf.Update(caughtUp); err != nil { // status-only: the predicate alone would drop it
		t.Fatal(err)
	}
	pollUntil(t, "reconciliation after the cache caught up", func() bool { return calls.Load() == 2 })
	if got := f.Traces("ns/a")[2].Result; got != ResultSuccess {
		t.Fatalf("third reconciliation = %q, want %q", got, ResultSuccess)
	}
}

// TestStaleEndsWhenRelistSkipsOwnWrite: a relist after a restarted watch
// can skip the resourceVersion of the Framework's own write, the cache
// jumping to a newer version of the object (same generation, a status-only
// change the update predicate drops). A reconciliation deferred for the
// write runs then, not after DefaultWriteExpectationTTL.
func TestStaleEndsWhenRelistSkipsOwnWrite(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var calls atomic.Int64
	r := &funcResource{name: "status", create: func(ctx context.Context, obj any) error {
		if calls.Add(1) == 1 {
			resourceversioncontext.SetResourceVersion(ctx, "7") // as a status patch would return
		}
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, TracesPerObject: 16})
	if err != nil {
		t.Fatal(err)
	}
	f.writeExpectationTTL = time.Hour // only the cache can end the wait within the test
	boot(t, f)
	pollUntil(t, "first reconciliation", func() bool { return len(f.Traces("ns/a")) == 1 })

	f.Enqueue("ns/a") // a child's event; the cache still has resourceVersion 1
	pollUntil(t, "deferred reconciliation", func() bool { return len(f.Traces("ns/a")) == 2 })
	if got := f.Traces("ns/a")[1].Result; got != ResultStale {
		t.Fatalf("second reconciliation = %q, want %q", got, ResultStale)
	}

	relisted := object("a", 1, nil)
	relisted.SetResourceVersion("9") // 7 was never delivered
	if err := inf.Update(relisted); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the deferred reconciliation, once the cache jumped past the write", func() bool { return calls.Load() == 2 })
	if got := f.Traces("ns/a")[2].Result; got != ResultSuccess {
		t.Fatalf("third reconciliation = %q, want %q", got, ResultSuccess)
	}

	// The next wake-up (a child's event) is not deferred either.
	f.Enqueue("ns/a")
	pollUntil(t, "fourth reconciliation", func() bool { return calls.Load() == 3 })
}

// stepBackOff waits 10 ms after a first failure and an hour after any
// later one.
type stepBackOff struct{ n int }

func (b *stepBackOff) NextBackOff() time.Duration {
	b.n++
	if b.n == 1 {
		return 10 * time.Millisecond
	}
	return time.Hour
}

func (b *stepBackOff) Reset() { b.n = 0 }

// TestStaleKeepsBackoff: a failed reconciliation that wrote the object is
// retried, the retry finds the cache behind that write (ResultStale), and
// the next failure continues the object's backoff instead of starting it
// over: a stale result is not a success.
func TestStaleKeepsBackoff(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var calls atomic.Int64
	r := &funcResource{name: "status", create: func(ctx context.Context, obj any) error {
		switch calls.Add(1) {
		case 1:
			resourceversioncontext.SetResourceVersion(ctx, "7") // written, then failed
			return errors.New("first failure")
		case 2:
			return errors.New("second failure")
		}
		return nil
	}}
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, TracesPerObject: 16,
		BackOffFactory: func() backoff.BackOff { return &stepBackOff{} }})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "the retry deferred as stale", func() bool {
		return slices.ContainsFunc(f.Traces("ns/a"), func(tr trace.Trace) bool { return tr.Result == ResultStale })
	})
	caughtUp := object("a", 1, nil)
	caughtUp.SetResourceVersion("7")
	if err := inf.Update(caughtUp); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "the second failure", func() bool { return calls.Load() == 2 })
	// Its backoff is the second step (an hour), not the first again (10 ms,
	// then a third call).
	pollUntil(t, "two failures counted", func() bool { return f.queue.NumRequeues("ns/a") == 2 })
	if n := calls.Load(); n != 2 {
		t.Fatalf("resource calls = %d, want 2 (the second failure waits an hour)", n)
	}
}

// TestDeletionEventBeforePatchAnswer: the object's deletion event can reach
// DeleteFunc before the finalizer patch returns; it must find the UID marked
// finalized, so no tombstone runs the delete chain again.
func TestDeletionEventBeforePatchAnswer(t *testing.T) {
	s := newObjectState()
	uid := types.UID("u1")
	s.begin("ns/a")
	s.markFinalized("ns/a", uid) // removeFinalizer marks before it sends the patch
	if !s.finalized("ns/a", uid) {
		t.Fatal("a deletion event during the finalizer patch does not see the mark")
	}
	if s.wasFinalized("ns/a", uid) {
		t.Fatal("the mark was not consumed by the deletion event")
	}
	s.begin("ns/b")
	s.markFinalized("ns/b", "u2")
	s.unmarkFinalized("ns/b", "u2") // the patch failed
	if s.wasFinalized("ns/b", "u2") {
		t.Fatal("a failed finalizer patch left the mark behind")
	}
}

// TestConflictWithNewerCacheRetriesAtOnce: a conflict whose winner the cache
// already holds is reconciled again at once, not after the backoff; a
// conflict the cache does not explain yet waits for the backoff.
func TestConflictWithNewerCacheRetriesAtOnce(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	var calls atomic.Int64
	inf := informertest.New(object("a", 1, nil), object("b", 1, nil))
	gr := schema.GroupResource{Group: "example.com", Resource: "widgets"}
	r := &funcResource{name: "status", create: func(ctx context.Context, obj any) error {
		u := obj.(*unstructured.Unstructured)
		calls.Add(1)
		if u.GetResourceVersion() != "1" {
			return nil
		}
		if u.GetName() == "a" {
			// Someone else's write lands in the cache (status only: the
			// update predicate alone would not enqueue it).
			newer := u.DeepCopy()
			newer.SetResourceVersion("2")
			if err := inf.Update(newer); err != nil {
				return err
			}
		}
		return apierrors.NewConflict(gr, u.GetName(), errors.New("the object has been modified"))
	}}
	hour := func() backoff.BackOff { return backoff.NewConstantBackOff(time.Hour) }
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true, BackOffFactory: hour, TracesPerObject: 16})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "a reconciled again after its conflict", func() bool {
		tr := f.Traces("ns/a")
		return len(tr) == 2 && tr[1].Result == ResultSuccess
	})
	if got := f.Traces("ns/a")[0].Result; got != ResultConflict {
		t.Errorf("first reconciliation of a = %q, want %q", got, ResultConflict)
	}
	if tr := f.Traces("ns/b"); trace.Reconciliations(tr) != 1 || tr[0].Result != ResultConflict {
		t.Errorf("b (cache not moved on) = %d reconciliations, want only its conflict, waiting for the backoff", trace.Reconciliations(tr))
	}
}

// TestSupersededReconciliationStops: when the spec changes while a
// reconciliation runs, the resources after the change do not run for the
// old generation (their writes would be overwritten); the new generation is
// reconciled in full next. With RunSuperseded every resource runs for both.
func TestSupersededReconciliationStops(t *testing.T) {
	for _, runSuperseded := range []bool{false, true} {
		t.Run(fmt.Sprintf("RunSuperseded=%v", runSuperseded), func(t *testing.T) {
			t.Cleanup(func() { goleak.VerifyNone(t) })
			inf := informertest.New(object("a", 1, nil))
			var mu sync.Mutex
			var seen []string // resource@generation
			record := func(name string, obj any) {
				mu.Lock()
				defer mu.Unlock()
				seen = append(seen, fmt.Sprintf("%s@%d", name, obj.(*unstructured.Unstructured).GetGeneration()))
			}
			first := &funcResource{name: "first", create: func(_ context.Context, obj any) error {
				record("first", obj)
				if obj.(*unstructured.Unstructured).GetGeneration() == 1 {
					return inf.Update(object("a", 2, nil)) // the user edits the spec meanwhile
				}
				return nil
			}}
			second := &funcResource{name: "second", create: func(_ context.Context, obj any) error {
				record("second", obj)
				return nil
			}}
			f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, first, second),
				DisableFinalizers: true, RunSuperseded: runSuperseded, TracesPerObject: 16})
			if err != nil {
				t.Fatal(err)
			}
			boot(t, f)
			pollUntil(t, "generation 2 reconciled", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return slices.Contains(seen, "second@2")
			})
			mu.Lock()
			got := slices.Clone(seen)
			mu.Unlock()
			want := []string{"first@1", "first@2", "second@2"}
			wantResult := ResultSuperseded
			if runSuperseded {
				want = []string{"first@1", "second@1", "first@2", "second@2"}
				wantResult = ResultSuccess
			}
			if !slices.Equal(got, want) {
				t.Errorf("resources ran %q, want %q", got, want)
			}
			if tr := f.Traces("ns/a"); tr[0].Result != wantResult {
				t.Errorf("first reconciliation = %q, want %q", tr[0].Result, wantResult)
			}
		})
	}
}

// recordingLogger keeps every line it is given, whatever its level;
// debugEnabled answers DebugEnabled.
type recordingLogger struct {
	mu           sync.Mutex
	lines        [][]any
	debugEnabled bool
}

func (l *recordingLogger) Log(keyvals ...any) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, keyvals)
	return nil
}

func (l *recordingLogger) DebugEnabled() bool { return l.debugEnabled }

// reconciledLines counts the per-reconciliation debug lines l was given.
func (l *recordingLogger) reconciledLines() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, kv := range l.lines {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "msg" && kv[i+1] == "reconciled" {
				n++
			}
		}
	}
	return n
}

// TestDebugLineOnlyWhenLoggerKeepsDebug: a Logger whose DebugEnabled says
// false is not given the per-reconciliation debug line at all (the Framework
// does not build it); one that says true gets it, with the trace.
func TestDebugLineOnlyWhenLoggerKeepsDebug(t *testing.T) {
	for _, enabled := range []bool{false, true} {
		t.Run(fmt.Sprintf("DebugEnabled=%v", enabled), func(t *testing.T) {
			logger := &recordingLogger{debugEnabled: enabled}
			inf := informertest.New(object("a", 1, nil))
			f, err := New(Config{
				Name: "op", Informer: inf, Logger: logger, DisableFinalizers: true,
				ResourceRouter: testRouter(t, func(any) bool { return true }, &funcResource{name: "r"}),
			})
			if err != nil {
				t.Fatal(err)
			}
			rctx := newReconcileContext(context.Background(), time.Now().Add(time.Minute))
			o := f.reconcile(rctx, rctx, "ns/a")
			rctx.stop()
			if o.result != ResultSuccess {
				t.Fatalf("reconciliation: %s %v", o.result, o.err)
			}
			want := 0
			if enabled {
				want = 1
			}
			if got := logger.reconciledLines(); got != want {
				t.Errorf("debug lines %q = %d, want %d (lines: %v)", "reconciled", got, want, logger.lines)
			}
		})
	}
}

// TestLastSuccessTimestamp: a successful reconciliation sets the
// last-success gauge to when it ended; a failed one leaves it.
func TestLastSuccessTimestamp(t *testing.T) {
	fail := false
	inf := informertest.New(object("a", 1, nil))
	f, err := New(Config{
		Name: "op", Informer: inf, DisableFinalizers: true,
		ResourceRouter: testRouter(t, func(any) bool { return true }, &funcResource{name: "r", create: func(context.Context, any) error {
			if fail {
				return errors.New("boom")
			}
			return nil
		}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	run := func() outcome {
		rctx := newReconcileContext(context.Background(), time.Now().Add(time.Minute))
		defer rctx.stop()
		return f.reconcile(rctx, rctx, "ns/a")
	}
	before := time.Now()
	if o := run(); o.result != ResultSuccess {
		t.Fatalf("reconciliation: %s %v", o.result, o.err)
	}
	after := time.Now()
	got := testutil.ToFloat64(f.metrics.lastSuccess)
	if min, max := float64(before.UnixNano())/1e9, float64(after.UnixNano())/1e9; got < min || got > max {
		t.Fatalf("last success = %f, want between %f and %f", got, min, max)
	}
	fail = true
	if o := run(); o.result != ResultError {
		t.Fatalf("reconciliation: %s %v, want an error", o.result, o.err)
	}
	if again := testutil.ToFloat64(f.metrics.lastSuccess); again != got {
		t.Errorf("a failed reconciliation moved the last success from %f to %f", got, again)
	}
}

// TestTraceStoreQuietObjectsTakeHalf: objects whose last reconciliation
// ended without an error take at most half of the places, so that many
// healthy objects do not push the traces of failing ones out; a place is
// taken from the least recent quiet object first, and from the least recent
// failing one only when no object is quiet.
func TestTraceStoreQuietObjectsTakeHalf(t *testing.T) {
	s := newTraceStore(10, 2)
	start := time.Unix(1000, 0)
	add := func(key string, err error) {
		start = start.Add(time.Second)
		tr := trace.New(key, start)
		ctx := trace.NewContext(context.Background(), tr)
		trace.Record(ctx, "r", "step", start, trace.OutcomeDone, nil)
		result := ResultSuccess
		if err != nil {
			result = ResultError
		}
		tr.Finish(result, 0, err)
		s.add(key, tr)
	}
	kept := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if traces, _ := s.get(k); len(traces) == 0 {
				t.Errorf("%s has no traces, want them kept", k)
			}
		}
	}
	dropped := func(keys ...string) {
		t.Helper()
		for _, k := range keys {
			if traces, _ := s.get(k); len(traces) != 0 {
				t.Errorf("%s still has traces, want it dropped", k)
			}
		}
	}
	for i := range 3 {
		add(fmt.Sprint("f", i), errors.New("boom"))
	}
	for i := range 100 {
		add(fmt.Sprint("q", i), nil)
	}
	if s.len() != 8 {
		t.Errorf("objects kept = %d, want 8 (3 failing, 5 quiet)", s.len())
	}
	kept("f0", "f1", "f2", "q95", "q99")
	dropped("q94")

	// f0 recovers: it turns quiet and pushes the least recent quiet one out.
	add("f0", nil)
	kept("f0", "q96")
	dropped("q95")
	if traces, _ := s.get("f0"); len(traces) != 2 || traces[0].Error == "" || traces[1].Error != "" {
		t.Errorf("f0's traces = %+v, want its failure and its recovery", traces)
	}

	// Failing objects take the quiet ones' places, least recent first, then
	// each other's.
	for i := 3; i < 15; i++ {
		add(fmt.Sprint("f", i), errors.New("boom"))
	}
	if s.len() != 10 {
		t.Errorf("objects kept = %d, want 10", s.len())
	}
	dropped("q96", "q99", "f0", "f1", "f2", "f3", "f4")
	kept("f5", "f14")

	sums := s.summaries()
	for i := 1; i < len(sums); i++ {
		if sums[i].Start.After(sums[i-1].Start) {
			t.Fatalf("summaries not most recent first: %s at %v after %s at %v", sums[i].Object, sums[i].Start, sums[i-1].Object, sums[i-1].Start)
		}
	}
	if len(sums) != 10 || sums[0].Object != "f14" {
		t.Errorf("summaries = %d, first %s; want 10, first f14", len(sums), sums[0].Object)
	}
}

// crudSteps records the steps of a crud resource named r into tr: its
// read steps, then its apply steps, each skipped unless named in applied,
// then the Framework's "ensure created".
func crudSteps(tr *trace.Trace, r string, applied ...string) {
	start := tr.Start
	for _, st := range []string{crud.StepGetCurrentState, crud.StepGetDesiredState, crud.StepNewUpdatePatch} {
		tr.Record(r, st, start, trace.OutcomeDone, nil)
	}
	for _, st := range []string{crud.StepApplyCreateChange, crud.StepApplyUpdateChange, crud.StepApplyDeleteChange} {
		if slices.Contains(applied, st) {
			tr.Record(r, st, start, trace.OutcomeDone, nil)
		} else {
			tr.RecordNotRun(r, st, trace.OutcomeSkipped)
		}
	}
	tr.Record(r, resource.OperationEnsureCreated, start, trace.OutcomeDone, nil)
}

func TestChangedNothing(t *testing.T) {
	for _, c := range []struct {
		name   string
		record func(tr *trace.Trace)
		want   bool
	}{
		{"two crud resources in sync", func(tr *trace.Trace) { crudSteps(tr, "a"); crudSteps(tr, "b") }, true},
		{"and the conditions read, the status left alone", func(tr *trace.Trace) {
			crudSteps(tr, "a")
			tr.Record("framework", StepLockCondition, tr.Start, trace.OutcomeDone, nil)
			tr.RecordNotRun("framework", StepWriteStatus, trace.OutcomeSkipped)
		}, true},
		{"an update applied", func(tr *trace.Trace) { crudSteps(tr, "a"); crudSteps(tr, "b", crud.StepApplyUpdateChange) }, false},
		{"a create applied", func(tr *trace.Trace) { crudSteps(tr, "a", crud.StepApplyCreateChange) }, false},
		{"a delete applied", func(tr *trace.Trace) { crudSteps(tr, "a", crud.StepApplyDeleteChange) }, false},
		{"the status written", func(tr *trace.Trace) {
			crudSteps(tr, "a")
			tr.Record("framework", StepWriteStatus, tr.Start, trace.OutcomeDone, nil)
		}, false},
		{"a plain resource (it may have written)", func(tr *trace.Trace) {
			crudSteps(tr, "a")
			tr.Record("plain", resource.OperationEnsureCreated, tr.Start, trace.OutcomeDone, nil)
		}, false},
		{"a step it does not know", func(tr *trace.Trace) { tr.Record("x", "sync the DNS record", tr.Start, trace.OutcomeDone, nil) }, false},
		{"more crud resources than it tracks", func(tr *trace.Trace) {
			for i := range 9 {
				crudSteps(tr, fmt.Sprint("r", i))
			}
		}, false},
		{"no step at all", func(*trace.Trace) {}, true},
	} {
		tr := trace.New("ns/a", time.Unix(1000, 0))
		c.record(tr)
		if got := tr.ScanSteps(changedNothing); got != c.want {
			t.Errorf("%s: changedNothing = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestTraceStoreNoOpsTakeOnlyFreePlaces: a resync of more objects than the
// store holds, every one in sync, pushes out neither the traces of the
// objects whose last reconciliation changed something nor the failing
// ones, and stores nothing new once the quiet places are taken; the objects
// the store holds still fold their no-ops, and a change still takes the
// place of the least recent quiet object.
func TestTraceStoreNoOpsTakeOnlyFreePlaces(t *testing.T) {
	s := newTraceStore(10, 2) // 5 quiet places
	start := time.Unix(1000, 0)
	add := func(key string, err error, applied ...string) bool {
		start = start.Add(time.Second)
		tr := trace.New(key, start)
		crudSteps(tr, "cm", applied...)
		result := ResultSuccess
		if err != nil {
			result = ResultError
		}
		tr.Finish(result, 0, err)
		return s.add(key, tr)
	}
	add("f0", errors.New("boom"))
	for i := range 3 {
		add(fmt.Sprint("c", i), nil, crud.StepApplyUpdateChange)
	}
	for i := range 100 { // the resync: two of them find free places
		add(fmt.Sprint("n", i), nil)
	}
	for _, k := range []string{"f0", "c0", "c1", "c2", "n0", "n1"} {
		if traces, _ := s.get(k); len(traces) == 0 {
			t.Errorf("%s has no traces after the resync, want them kept", k)
		}
	}
	if s.len() != 6 {
		t.Errorf("objects kept = %d, want 6 (1 failing, 3 changed, the 2 no-ops that found a free place)", s.len())
	}
	if traces, _ := s.get("n99"); len(traces) != 0 {
		t.Errorf("n99's no-op took a place from another object: %+v", traces)
	}

	// The resync again: the objects held fold their no-ops.
	for _, k := range []string{"c0", "n0"} {
		if kept := add(k, nil); kept && k == "n0" {
			t.Errorf("%s's second no-op was kept as a trace of its own, want it folded", k)
		}
	}
	if traces, _ := s.get("c0"); len(traces) != 2 || traces[0].Steps[4].Outcome != trace.OutcomeDone || traces[1].Steps[4].Outcome != trace.OutcomeSkipped {
		t.Errorf("c0's traces = %+v, want its change and its no-op", traces)
	}

	// A change of an object the store does not hold takes the place of
	// the least recent quiet object (c1; c0 and n0 were just reconciled).
	if !add("n50", nil, crud.StepApplyCreateChange) {
		t.Error("the change of n50 was not kept")
	}
	if traces, _ := s.get("c1"); len(traces) != 0 {
		t.Errorf("c1 still has traces, want its place taken by n50's change")
	}
	for _, k := range []string{"f0", "c0", "c2", "n0", "n1", "n50"} {
		if traces, _ := s.get(k); len(traces) == 0 {
			t.Errorf("%s has no traces, want them kept", k)
		}
	}
}

// TestEnqueueDropsKeysThatNameNoObject: a key that can name no object
// (a map function of a watch that returned "" for a child without its
// label, say) is dropped with a warning naming it, instead of being
// reconciled as an object that is not in the cache and skipped in
// silence, with a trace of its own.
func TestEnqueueDropsKeysThatNameNoObject(t *testing.T) {
	logger := &recordingLogger{}
	r := &funcResource{name: "r"}
	f, err := New(Config{Name: "op", Informer: informertest.New(object("a", 1, nil)), Logger: logger, DisableFinalizers: true,
		ResourceRouter: testRouter(t, nil, r)})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	bad := []string{"", "/", "ns/", "/a", "ns/a/b", "ns//a"}
	for _, key := range bad {
		f.Enqueue(key)
	}
	f.Enqueue("ns/a") // queued after the bad keys: reconciled once they would have been
	pollUntil(t, "the reconciliation of ns/a", func() bool { return len(f.Traces("ns/a")) == 1 })
	for _, key := range bad {
		if tr := f.Traces(key); len(tr) != 0 {
			t.Errorf("Enqueue(%q) was reconciled: traces %+v", key, tr)
		}
		found := false
		logger.mu.Lock()
		for _, kv := range logger.lines {
			if slices.Contains(kv, any(`Enqueue: key is not "namespace/name" or "name": dropped`)) && slices.Contains(kv, any(key)) {
				found = true
			}
		}
		logger.mu.Unlock()
		if !found {
			t.Errorf("no warning for Enqueue(%q); lines: %v", key, logger.lines)
		}
	}
}

// TestConflictOnTheObjectWaitsForTheWinner: a conflict on the reconciled
// object itself (its resource and name) whose winner the cache does not
// show yet is not retried from the same cache, which would send the same
// write to fail the same way: the retry waits until the cache shows another
// version (here a status-only one, which the update predicate alone would
// not enqueue). A conflict on another object (a child) is retried with the
// backoff alone.
func TestConflictOnTheObjectWaitsForTheWinner(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	inf := informertest.New(object("a", 1, nil), object("b", 1, nil))
	gvr := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	var mu sync.Mutex
	calls := map[string]int{} // name@resourceVersion
	count := func(name, rv string) int {
		mu.Lock()
		defer mu.Unlock()
		return calls[name+"@"+rv]
	}
	r := &funcResource{name: "status", create: func(ctx context.Context, obj any) error {
		u := obj.(*unstructured.Unstructured)
		mu.Lock()
		calls[u.GetName()+"@"+u.GetResourceVersion()]++
		mu.Unlock()
		if u.GetResourceVersion() != "1" {
			return nil
		}
		gr := gvr.GroupResource()
		if u.GetName() == "b" {
			gr = schema.GroupResource{Resource: "configmaps"} // its child's update lost
		}
		return fmt.Errorf("write: %w", apierrors.NewConflict(gr, u.GetName(), errors.New("the object has been modified")))
	}}
	every := func() backoff.BackOff { return backoff.NewConstantBackOff(20 * time.Millisecond) }
	f, err := New(Config{Name: "op", Informer: inf, ResourceRouter: testRouter(t, nil, r), DisableFinalizers: true,
		Resource: gvr, BackOffFactory: every, TracesPerObject: 16})
	if err != nil {
		t.Fatal(err)
	}
	boot(t, f)
	pollUntil(t, "b's conflict retried with the backoff", func() bool { return count("b", "1") >= 3 })
	waited := func() bool {
		return slices.ContainsFunc(f.Traces("ns/a"), func(tr trace.Trace) bool { return tr.Result == ResultStale })
	}
	pollUntil(t, "a's retry after its conflict", func() bool { return waited() || count("a", "1") > 1 })
	if n := count("a", "1"); n != 1 || !waited() {
		t.Errorf("a's write was sent %d times from the version that lost (want 1), its retry waited for the winner: %v", n, waited())
	}
	winner := object("a", 1, nil)
	winner.SetResourceVersion("2")
	if err := inf.Update(winner); err != nil {
		t.Fatal(err)
	}
	pollUntil(t, "a reconciled at the winner's version", func() bool { return count("a", "2") == 1 })
	if n := count("a", "1"); n != 1 {
		t.Errorf("a's write was sent %d times from the version that lost, want 1", n)
	}
}
