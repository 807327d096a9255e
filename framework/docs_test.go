package framework_test

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/metrics"
	"github.com/operatorkit/operatorkit/router"
)

var metricName = regexp.MustCompile(`operatorkit_[a-z_]+[a-z]`)

// TestObservabilityDocs keeps docs/observability.md and the dashboard true:
// every metric the library registers is documented, and every metric the
// doc or the dashboard names exists.
func TestObservabilityDocs(t *testing.T) {
	reg := &recordingRegisterer{Registerer: prometheus.NewRegistry(), names: map[string]bool{}}
	inner, err := crud.New(crud.Config{Ops: crudtest.Nop("r")})
	if err != nil {
		t.Fatal(err)
	}
	wrapped, err := metrics.New(metrics.Config{Resource: inner, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := wrapped.EnsureCreated(context.Background(), &unstructured.Unstructured{}); err != nil {
		t.Fatal(err)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: []resource.Interface{wrapped}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	f, err := framework.New(framework.Config{Name: "docs", Informer: informertest.New(), ResourceRouter: rt, DisableFinalizers: true, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }() // the work queue's metrics exist once it is created
	<-f.Booted()
	gvr := schema.GroupVersionResource{Group: "g", Version: "v1", Resource: "things"}
	dc := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{gvr: "ThingList"})
	if _, err := informer.New(informer.Config{Client: dc, GVR: gvr, Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	counter := requestcount.New()
	if err := reg.Register(counter.Collector()); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	registered := reg.names

	for _, file := range []string{"../docs/observability.md", "../docs/dashboards/operatorkit.json"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		documented := map[string]bool{}
		for _, m := range metricName.FindAllString(string(data), -1) {
			m = regexp.MustCompile(`_(bucket|sum|count)$`).ReplaceAllString(m, "")
			documented[m] = true
			if strings.HasPrefix(m, "operatorkit_shard_") || strings.HasPrefix(m, "operatorkit_operator_") {
				continue // the operator package's; its TestShardMetricsDocumented and TestOperatorMetricsDocumented check them
			}
			if !registered[m] {
				t.Errorf("%s names %s, which the library does not register", file, m)
			}
		}
		if file == "../docs/observability.md" {
			var missing []string
			for name := range registered {
				if !documented[name] {
					missing = append(missing, name)
				}
			}
			slices.Sort(missing)
			for _, name := range missing {
				t.Errorf("%s does not document %s", file, name)
			}
		}
	}
}

var fqName = regexp.MustCompile(`fqName: "([^"]+)"`)

// recordingRegisterer records the metric names of every collector
// registered through it, from their descriptors, so that metrics without
// samples yet count too.
type recordingRegisterer struct {
	prometheus.Registerer
	names map[string]bool
}

func (r *recordingRegisterer) Register(c prometheus.Collector) error {
	descs := make(chan *prometheus.Desc, 64)
	go func() { c.Describe(descs); close(descs) }()
	for d := range descs {
		if m := fqName.FindStringSubmatch(d.String()); m != nil {
			r.names[m[1]] = true
		}
	}
	return r.Registerer.Register(c)
}

func (r *recordingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}
