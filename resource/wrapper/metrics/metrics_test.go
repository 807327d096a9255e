package metrics_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/metrics"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

const (
	durationName = "operatorkit_resource_operation_duration_seconds"
	errorsName   = "operatorkit_resource_operation_errors_total"
)

var errBoom = errors.New("boom")

// plain is a resource.Interface that is not a crud resource.
type plain struct {
	name string
	err  error
}

func (p *plain) Name() string                             { return p.name }
func (p *plain) EnsureCreated(context.Context, any) error { return p.err }
func (p *plain) EnsureDeleted(context.Context, any) error { return p.err }

func newCrud(t *testing.T, ops crud.Ops) *crud.Resource {
	t.Helper()
	r, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func newMetrics(t *testing.T, r resource.Interface, reg prometheus.Registerer) *metrics.Resource {
	t.Helper()
	m, err := metrics.New(metrics.Config{Resource: r, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func newRetry(t *testing.T, r resource.Interface) *retry.Resource {
	t.Helper()
	w, err := retry.New(retry.Config{
		Resource:       r,
		BackOffFactory: func() backoff.BackOff { return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 3) },
	})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// sample is what the registry holds for one resource and operation.
type sample struct {
	count  uint64  // observations of the duration histogram
	errors float64 // value of the error counter
}

// gather returns the samples in reg by "resource/operation", checking that
// every metric has exactly the labels resource and operation.
func gather(t *testing.T, reg *prometheus.Registry) map[string]sample {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]sample{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			got := map[string]string{}
			for _, l := range m.GetLabel() {
				got[l.GetName()] = l.GetValue()
			}
			if len(got) != 2 || got["resource"] == "" || got["operation"] == "" {
				t.Fatalf("%s has labels %v, want exactly resource and operation", f.GetName(), got)
			}
			key := got["resource"] + "/" + got["operation"]
			s := out[key]
			switch f.GetName() {
			case durationName:
				s.count = m.GetHistogram().GetSampleCount()
			case errorsName:
				s.errors = m.GetCounter().GetValue()
			default:
				t.Fatalf("unexpected metric %s", f.GetName())
			}
			out[key] = s
		}
	}
	return out
}

func TestNew(t *testing.T) {
	_, err := metrics.New(metrics.Config{})
	if !errors.Is(err, metrics.ErrInvalidConfig) || !strings.Contains(err.Error(), "metrics.Config.Resource must not be empty") {
		t.Fatalf("New() error = %v, want ErrInvalidConfig naming Resource", err)
	}
	var never *plain // a typed nil: its Name would panic
	if _, err := metrics.New(metrics.Config{Resource: never}); !errors.Is(err, metrics.ErrInvalidConfig) {
		t.Fatalf("New() with a nil *plain = %v, want ErrInvalidConfig", err)
	}

	if _, err := metrics.New(metrics.Config{Resource: &plain{name: "p\xff"}}); !errors.Is(err, metrics.ErrInvalidConfig) || !strings.Contains(err.Error(), "metrics.Config.Resource has a name that is not valid UTF-8") {
		t.Fatalf("New() with a name that is not UTF-8 = %v, want ErrInvalidConfig naming Resource", err)
	}
	if _, err := metrics.New(metrics.Config{Resource: &plain{name: "p"}, Registerer: (*prometheus.Registry)(nil)}); err != nil {
		t.Fatalf("New(Registerer: a nil *prometheus.Registry, which registers nothing) = %v", err)
	}
	p := &plain{name: "p"}
	m := newMetrics(t, p, nil) // no registry: still works
	if err := m.EnsureCreated(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if m.Unwrap() != resource.Interface(p) || m.Name() != "p" {
		t.Fatalf("Unwrap() = %v, Name() = %q", m.Unwrap(), m.Name())
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: errorsName, Help: "a different collector"}))
	if _, err := metrics.New(metrics.Config{Resource: p, Registerer: reg}); !errors.Is(err, metrics.ErrInvalidConfig) || !strings.Contains(err.Error(), "metrics.Config.Registerer") {
		t.Fatalf("New() over a different collector of the same name = %v, want ErrInvalidConfig naming metrics.Config.Registerer", err)
	}
}

func TestMetricsPlain(t *testing.T) {
	reg := prometheus.NewRegistry()
	ok := newMetrics(t, &plain{name: "ok"}, reg)
	failing := newMetrics(t, &plain{name: "failing", err: errBoom}, reg) // second resource on one registry
	ctx := context.Background()

	_ = ok.EnsureCreated(ctx, nil)
	_ = ok.EnsureCreated(ctx, nil)
	_ = ok.EnsureDeleted(ctx, nil)
	if err := failing.EnsureDeleted(ctx, nil); !errors.Is(err, errBoom) {
		t.Fatalf("EnsureDeleted() = %v, want %v", err, errBoom)
	}

	want := map[string]sample{
		"ok/ensure created":      {count: 2},
		"ok/ensure deleted":      {count: 1},
		"failing/ensure created": {count: 0},
		"failing/ensure deleted": {count: 1, errors: 1},
	}
	got := gather(t, reg)
	if len(got) != len(want) {
		t.Fatalf("series = %v, want %v", got, want)
	}
	for key, w := range want {
		if got[key] != w {
			t.Errorf("%s = %+v, want %+v", key, got[key], w)
		}
	}
	if n := testutil.CollectAndCount(reg, errorsName); n != 4 {
		t.Errorf("%s has %d series, want 4", errorsName, n)
	}
}

func TestMetricsCrudAndComposition(t *testing.T) {
	p := crud.NewPatch()
	p.SetUpdateChange("u")
	failOnce := map[string][]error{crud.StepApplyUpdateChange: {errBoom, nil}}

	tests := []struct {
		name  string
		build func(t *testing.T, c *crud.Resource, reg prometheus.Registerer) resource.Interface
		want  map[string]sample // for resource "configmap"
	}{
		{
			name: "metrics(crud)",
			build: func(t *testing.T, c *crud.Resource, reg prometheus.Registerer) resource.Interface {
				return newMetrics(t, c, reg)
			},
			want: map[string]sample{
				"ensure created":      {count: 1, errors: 1},
				"get current state":   {count: 1},
				"apply update change": {count: 1, errors: 1},
			},
		},
		{
			name: "retry(metrics(crud)) times each attempt",
			build: func(t *testing.T, c *crud.Resource, reg prometheus.Registerer) resource.Interface {
				return newRetry(t, newMetrics(t, c, reg))
			},
			want: map[string]sample{
				"ensure created":      {count: 1},
				"get current state":   {count: 1},
				"apply update change": {count: 2, errors: 1},
			},
		},
		{
			name: "metrics(retry(crud)) times each retried step",
			build: func(t *testing.T, c *crud.Resource, reg prometheus.Registerer) resource.Interface {
				return newMetrics(t, newRetry(t, c), reg)
			},
			want: map[string]sample{
				"ensure created":      {count: 1},
				"get current state":   {count: 1},
				"apply update change": {count: 1},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ops := &crudtest.Ops{Resource: "configmap", Patch: p, Errors: failOnce}
			reg := prometheus.NewRegistry()
			r := tt.build(t, newCrud(t, ops), reg)
			_ = r.EnsureCreated(context.Background(), nil)

			got := gather(t, reg)
			for op, w := range tt.want {
				if got["configmap/"+op] != w {
					t.Errorf("%s = %+v, want %+v", op, got["configmap/"+op], w)
				}
			}
			// Every step is exported, skipped ones at 0.
			if s, ok := got["configmap/"+crud.StepApplyDeleteChange]; !ok || s != (sample{}) {
				t.Errorf("apply delete change = %+v, %v; want present at 0", s, ok)
			}
			if n := ops.Count(crud.StepGetCurrentState); n != 1 {
				t.Errorf("get current state ran %d times, want 1", n)
			}
		})
	}
}

// panicking is a resource whose operations panic.
type panicking struct{}

func (panicking) Name() string                             { return "panicking" }
func (panicking) EnsureCreated(context.Context, any) error { panic("boom") }
func (panicking) EnsureDeleted(context.Context, any) error { panic("boom") }

// TestMetricsPanic: an operation that panics is measured and counted as an
// error, and its panic goes on to the caller (the Framework recovers it).
func TestMetricsPanic(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := newMetrics(t, panicking{}, reg)
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the resource's panic", p)
			}
		}()
		_ = m.EnsureCreated(context.Background(), nil)
	}()
	if got, want := gather(t, reg)["panicking/ensure created"], (sample{count: 1, errors: 1}); got != want {
		t.Errorf("panicking/ensure created = %+v, want %+v", got, want)
	}
}
