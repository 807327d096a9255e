package operator

import (
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/informer"
)

var thingsGVR = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}

func TestShardingConfigErrorsNameTheField(t *testing.T) {
	tests := []struct {
		name     string
		sharding Sharding
		want     string
	}{
		{"no resources", Sharding{}, "Sharding.Resources must not be empty"},
		{"resource without version", Sharding{Resources: []schema.GroupVersionResource{{Resource: "things"}}}, "Sharding.Resources[0]"},
		{"ring too long", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Ring: strings.Repeat("r", 64)}, "Sharding.Ring"},
		{"identity not a DNS label", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Identity: "Pod_1"}, "Sharding.Identity \"Pod_1\""},
		{"negative virtual nodes", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, VirtualNodes: -1}, "Sharding.VirtualNodes"},
		{"negative workers", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, AssignWorkers: -1}, "Sharding.AssignWorkers"},
		{"virtual nodes past the memory", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, VirtualNodes: math.MaxInt}, "Sharding.VirtualNodes"},
		{"workers past the memory", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, AssignWorkers: math.MaxInt}, "Sharding.AssignWorkers"},
		{"negative QPS", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, AssignQPS: -1}, "Sharding.AssignQPS"},
		{"child without version", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Children: []schema.GroupVersionResource{{Resource: "configmaps"}}}, "Sharding.Children[0]"},
		{"child also assigned", Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Children: []schema.GroupVersionResource{thingsGVR}}, "Sharding.Children[0] \"example.com/v1, Resource=things\" is in Sharding.Resources too"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sh := tt.sharding
			_, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(), Sharding: &sh})
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New() = %v, want ErrInvalidConfig naming %q", err, tt.want)
			}
		})
	}
}

func TestShardingDefaultsAndSelector(t *testing.T) {
	sh := &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}}
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(), Sharding: sh})
	if err != nil {
		t.Fatal(err)
	}
	if sh.Identity != "" || sh.Ring != "" {
		t.Errorf("New changed the caller's Sharding: %+v", sh)
	}
	cfg := o.shard.cfg
	if cfg.Ring != "op" || cfg.VirtualNodes != DefaultVirtualNodes || cfg.AssignWorkers != DefaultShardAssignWorkers || cfg.AssignQPS != DefaultShardAssignQPS {
		t.Errorf("defaults: Ring %q, VirtualNodes %d, AssignWorkers %d, AssignQPS %v; want op, %d, %d, %d", cfg.Ring, cfg.VirtualNodes, cfg.AssignWorkers, cfg.AssignQPS, DefaultVirtualNodes, DefaultShardAssignWorkers, DefaultShardAssignQPS)
	}
	if o.shard.assignMD == o.metadata || o.shard.instance == "" {
		t.Error("the assigner needs a metadata client of its own (its own rate limit) and the process an instance token")
	}
	if cfg.Identity == "" || o.shard.leaseName != "op-"+cfg.Identity {
		t.Errorf("identity %q, Lease %q: want a default identity and the Lease op-<identity>", cfg.Identity, o.shard.leaseName)
	}

	inf, err := o.Informer(informer.Config{GVR: thingsGVR, Namespace: "ns", LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	want := "app=web," + ShardLabelPrefix + "op=" + cfg.Identity
	if got := o.informers[informerKey{gvr: thingsGVR, namespace: "ns", labels: want}]; got == nil || got.inf != inf.Informer || !got.sharded || got.userLabels != "app=web" {
		t.Errorf("the informer of a sharded resource is not keyed by the selector %q with the user's selector kept", want)
	}
	again, err := o.Informer(informer.Config{GVR: thingsGVR, Namespace: "ns", LabelSelector: "app=web"})
	if err != nil || again.Informer != inf.Informer {
		t.Errorf("a second Informer call with the same config got another informer (err %v)", err)
	}
	cms, err := o.Informer(informer.Config{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, si := range o.order {
		if si.inf == cms.Informer && (si.sharded || si.key.labels != "") {
			t.Errorf("the informer of a resource that is not sharded got the selector %q", si.key.labels)
		}
	}
	if got := o.ShardLabels(); len(got) != 1 || got[0] != ShardLabelPrefix+"op" {
		t.Errorf("ShardLabels() = %q, want [%s]", got, ShardLabelPrefix+"op")
	}
}

// TestShardingChildrenSelectTheShard: the informers of Sharding.Children
// select the shard label, but their objects are neither assigned nor
// counted as the replica's share.
func TestShardingChildrenSelectTheShard(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(),
		Sharding: &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Children: []schema.GroupVersionResource{cmGVR}, Identity: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	cms, err := o.Informer(informer.Config{GVR: cmGVR, Namespace: "ns", LabelSelector: "app.kubernetes.io/managed-by=op"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := o.Informer(informer.Config{GVR: secrets, Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	want := "app.kubernetes.io/managed-by=op," + ShardLabelPrefix + "op=a"
	for _, si := range o.order {
		switch si.inf {
		case cms.Informer:
			if si.key.labels != want || si.sharded {
				t.Errorf("children's informer: selector %q, sharded %v; want %q and not sharded (not assigned, not counted)", si.key.labels, si.sharded, want)
			}
		case other.Informer:
			if si.key.labels != "" || si.sharded {
				t.Errorf("the informer of a resource neither sharded nor a child got the selector %q", si.key.labels)
			}
		}
	}
	noShard, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry()})
	if err != nil {
		t.Fatal(err)
	}
	if got := noShard.ShardLabels(); got != nil {
		t.Errorf("ShardLabels() without sharding = %q, want none", got)
	}
}

func TestDefaultIdentityIsADNSLabel(t *testing.T) {
	id := defaultIdentity()
	sh := Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Identity: id}
	if err := sh.validate(Config{Name: "op"}); err != nil {
		t.Errorf("default identity %q: %v", id, err)
	}
	if defaultIdentity() == id {
		t.Error("two default identities are equal: they need a random suffix")
	}
}

func TestJSONPointerEscape(t *testing.T) {
	if got, want := jsonPointerEscape("shard.operatorkit.io/a~b"), "shard.operatorkit.io~1a~0b"; got != want {
		t.Errorf("jsonPointerEscape = %q, want %q", got, want)
	}
}

// TestShardingIgnoresTheDrainLabel: with sharding, NewFramework's Framework
// is not woken by the drain label appearing on an object (it is about to
// be handed over), but is by every other change the predicate passes.
func TestShardingIgnoresTheDrainLabel(t *testing.T) {
	sh := &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, Ring: "r"}
	o, err := New(Config{RESTConfig: restConfig(), Name: "op", Registry: prometheus.NewRegistry(), Sharding: sh})
	if err != nil {
		t.Fatal(err)
	}
	config, err := o.frameworkConfig(thingsConfig(t, o))
	if err != nil {
		t.Fatal(err)
	}
	thing := func(rv string, generation int64, labels map[string]string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetName("a")
		u.SetResourceVersion(rv)
		u.SetGeneration(generation)
		u.SetLabels(labels)
		return u
	}
	owned := map[string]string{sh.ShardLabel(): "me"}
	drained := map[string]string{sh.ShardLabel(): "me", sh.DrainLabel(): "true"}
	tests := []struct {
		name     string
		old, new *unstructured.Unstructured
		want     bool
	}{
		{"drain label added", thing("1", 1, owned), thing("2", 1, drained), false},
		{"spec changed while draining", thing("2", 1, drained), thing("3", 2, drained), true},
		{"drain label taken back", thing("2", 1, drained), thing("3", 1, owned), true},
		{"other label added", thing("1", 1, owned), thing("2", 1, map[string]string{sh.ShardLabel(): "me", "x": "y"}), true},
		{"status only", thing("1", 1, owned), thing("2", 1, owned), false},
	}
	for _, tt := range tests {
		if got := config.UpdatePredicate(tt.old, tt.new); got != tt.want {
			t.Errorf("%s: UpdatePredicate = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestShardingAssignQPSFollowsTheRESTConfig(t *testing.T) {
	for _, tt := range []struct{ restQPS, want float32 }{{0, DefaultShardAssignQPS}, {50, DefaultShardAssignQPS}, {1000, 1000}} {
		rc := restConfig()
		rc.QPS, rc.Burst = tt.restQPS, 1
		o, err := New(Config{RESTConfig: rc, Name: "op", Registry: prometheus.NewRegistry(), Sharding: &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}}})
		if err != nil {
			t.Fatal(err)
		}
		if got := o.shard.cfg.AssignQPS; got != tt.want {
			t.Errorf("RESTConfig.QPS %v: AssignQPS = %v, want %v", tt.restQPS, got, tt.want)
		}
	}
}

// TestShardMetricsDocumented: every sharding metric is in
// docs/observability.md and docs/scaling.md, and every operatorkit_shard_
// name there is one.
func TestShardMetricsDocumented(t *testing.T) {
	reg := prometheus.NewPedanticRegistry()
	m, err := newShardMetrics(reg, "r", func() float64 { return 0 })
	if err != nil {
		t.Fatal(err)
	}
	m.objects.WithLabelValues("a").Set(1) // a vector shows in Gather once it has a series
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	registered := map[string]bool{}
	for _, f := range families {
		registered[f.GetName()] = true
	}
	if len(registered) != 5 {
		t.Fatalf("gathered %d sharding metrics, want 5: %v", len(registered), registered)
	}
	name := regexp.MustCompile(`operatorkit_shard_[a-z_]+[a-z]`)
	for _, file := range []string{"../docs/observability.md", "../docs/scaling.md"} {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		documented := map[string]bool{}
		for _, n := range name.FindAllString(string(data), -1) {
			documented[n] = true
			if !registered[n] {
				t.Errorf("%s names %s, which is not a sharding metric", file, n)
			}
		}
		for n := range registered {
			if !documented[n] {
				t.Errorf("%s does not document %s", file, n)
			}
		}
	}
}

// TestShardingAssignQPSBeyondTheBurst: an AssignQPS whose burst (twice as
// many) no int holds still lets the assigner write, instead of making every
// write fail as exceeding a negative burst.
func TestShardingAssignQPSBeyondTheBurst(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"t","namespace":"ns"}}`)
	}))
	defer ts.Close()
	o, err := New(Config{RESTConfig: &rest.Config{Host: ts.URL}, Name: "op", Registry: prometheus.NewRegistry(),
		Sharding: &Sharding{Resources: []schema.GroupVersionResource{thingsGVR}, AssignQPS: math.MaxFloat32}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := o.shard.assignMD.Resource(thingsGVR).Namespace("ns").Patch(t.Context(), "t", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{}); err != nil {
		t.Fatalf("an assigner write with AssignQPS %g: %v", float32(math.MaxFloat32), err)
	}
}
