package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/router"
)

// replicaEnv, set to "1" in a child's environment, makes the binary run as
// one replica (replicaMain) instead of the driver.
const replicaEnv = "SHARDBENCH_REPLICA"

// The names shared by the driver and the replicas.
const (
	operatorName = "shardbench" // Config.Name, Sharding.Ring, LeaderElectionID
	objectLabel  = "shardbench.operatorkit.io/object"
	shardLabel   = operator.ShardLabelPrefix + operatorName
	drainLabel   = operator.DrainLabelPrefix + operatorName
)

var (
	configMapGVR = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// The values of -children.
const (
	childrenNone    = "none"
	childrenSharded = "sharded"
	childrenAll     = "all"
)

// newChildSecrets returns the child resource that keeps a Secret with the
// data of each ConfigMap, copying the ConfigMap's shard label when the
// replica is sharded (whether or not Sharding.Children caches the Secrets
// per shard).
func newChildSecrets(op *operator.Operator, namespace string) (resource.Interface, error) {
	const manager = operatorName
	secrets, err := op.Informer(informer.Config{GVR: secretGVR, Namespace: namespace, ObjectType: &corev1.Secret{},
		LabelSelector: child.LabelManagedBy + "=" + manager, ResyncPeriod: -1})
	if err != nil {
		return nil, err
	}
	return child.New(child.Config[*unstructured.Unstructured, *corev1.Secret]{
		Name:   "secret",
		Client: child.Typed(op.Kubernetes().CoreV1().Secrets),
		Cache:  secrets,
		Desired: func(_ context.Context, cm *unstructured.Unstructured) (*corev1.Secret, error) {
			data, _, err := unstructured.NestedStringMap(cm.Object, "data")
			if err != nil {
				return nil, err
			}
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: cm.GetName()}, Data: make(map[string][]byte, len(data))}
			for k, v := range data {
				secret.Data[k] = []byte(v)
			}
			return secret, nil
		},
		FieldManager: manager,
		OwnerGVK:     corev1.SchemeGroupVersion.WithKind("ConfigMap"),
		OwnerLabels:  op.ShardLabels(),
		Writes:       op.OwnWrites(),
	})
}

// replicaOptions are the flags of a replica process.
type replicaOptions struct {
	kubeconfig    string
	namespace     string
	identity      string
	sharded       bool
	workers       int
	external      time.Duration
	assignWorkers int
	qps           float64
	burst         int
	leaseDuration time.Duration
	renewDeadline time.Duration
	retryPeriod   time.Duration
	logLevel      string
	pprof         bool
	children      string
}

// args returns o as the command line of a replica.
func (o replicaOptions) args() []string {
	return []string{
		"-kubeconfig", o.kubeconfig,
		"-namespace", o.namespace,
		"-identity", o.identity,
		fmt.Sprintf("-sharded=%t", o.sharded),
		fmt.Sprintf("-workers=%d", o.workers),
		"-external", o.external.String(),
		fmt.Sprintf("-assign-workers=%d", o.assignWorkers),
		fmt.Sprintf("-kube-api-qps=%g", o.qps),
		fmt.Sprintf("-kube-api-burst=%d", o.burst),
		"-lease-duration", o.leaseDuration.String(),
		"-renew-deadline", o.renewDeadline.String(),
		"-retry-period", o.retryPeriod.String(),
		"-log-level", o.logLevel,
		fmt.Sprintf("-pprof=%t", o.pprof),
		"-children", o.children,
	}
}

// replicaMain runs one replica until SIGTERM: an Operator with one
// Framework over the ConfigMaps labelled objectLabel in the namespace,
// sharded unless -sharded=false. It prints "LISTEN <metrics URL>" on stdout
// once the metrics endpoint is open, and runs a garbage collection on
// SIGUSR1 (so that the driver reads the live heap of a collected process).
func replicaMain(args []string) error {
	var o replicaOptions
	fs := flag.NewFlagSet("shardbench replica", flag.ContinueOnError)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig of the API server")
	fs.StringVar(&o.namespace, "namespace", "", "namespace of the ConfigMaps and the Leases")
	fs.StringVar(&o.identity, "identity", "", "Sharding.Identity")
	fs.BoolVar(&o.sharded, "sharded", true, "set Config.Sharding")
	fs.IntVar(&o.workers, "workers", 16, "framework workers")
	fs.DurationVar(&o.external, "external", 50*time.Millisecond, "wait of each reconciliation")
	fs.IntVar(&o.assignWorkers, "assign-workers", 0, "Sharding.AssignWorkers")
	fs.Float64Var(&o.qps, "kube-api-qps", operator.DefaultKubeAPIQPS, "client-side rate limit")
	fs.IntVar(&o.burst, "kube-api-burst", operator.DefaultKubeAPIBurst, "client-side burst")
	fs.DurationVar(&o.leaseDuration, "lease-duration", 3*time.Second, "Config.LeaseDuration")
	fs.DurationVar(&o.renewDeadline, "renew-deadline", 2*time.Second, "Config.RenewDeadline")
	fs.DurationVar(&o.retryPeriod, "retry-period", 250*time.Millisecond, "Config.RetryPeriod")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level")
	fs.BoolVar(&o.pprof, "pprof", false, "serve net/http/pprof on the metrics address (Config.Pprof)")
	fs.StringVar(&o.children, "children", childrenNone, "child Secrets: none, sharded or all")
	if err := fs.Parse(args); err != nil {
		return err
	}

	if o.pprof {
		runtime.MemProfileRate = 512 // heap profiles precise enough for a few MiB
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	gc := make(chan os.Signal, 1)
	signal.Notify(gc, syscall.SIGUSR1)
	go func() {
		for range gc {
			// Twice: the first collection moves the sync.Pools'
			// buffers (decoders, HTTP/2 frames) to their victim
			// caches, where they still count as live; the second
			// frees them. What is left is what the process keeps.
			runtime.GC()
			runtime.GC()
		}
	}()

	restConfig, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	restConfig.QPS, restConfig.Burst = float32(o.qps), o.burst
	logger, err := operator.NewLogger(os.Stderr, o.logLevel, "logfmt")
	if err != nil {
		return err
	}
	config := operator.Config{
		RESTConfig:              restConfig,
		Name:                    operatorName,
		Logger:                  logger,
		MetricsAddress:          "127.0.0.1:0",
		LeaderElectionNamespace: o.namespace,
		LeaderElectionID:        operatorName,
		LeaseDuration:           o.leaseDuration,
		RenewDeadline:           o.renewDeadline,
		RetryPeriod:             o.retryPeriod,
		ShutdownTimeout:         10 * time.Second,
		Pprof:                   o.pprof,
	}
	if o.sharded {
		config.Sharding = &operator.Sharding{Resources: []schema.GroupVersionResource{configMapGVR}, Identity: o.identity, AssignWorkers: o.assignWorkers}
		if o.children == childrenSharded {
			config.Sharding.Children = []schema.GroupVersionResource{secretGVR}
		}
	}
	op, err := operator.New(config)
	if err != nil {
		return err
	}
	inf, err := op.Informer(informer.Config{GVR: configMapGVR, Namespace: o.namespace, LabelSelector: objectLabel + "=true", ResyncPeriod: -1})
	if err != nil {
		return err
	}
	ext := &externalCall{wait: o.external}
	resources := []resource.Interface{ext}
	if o.children != childrenNone {
		r, err := newChildSecrets(op, o.namespace)
		if err != nil {
			return err
		}
		resources = append(resources, r)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, Resources: resources})
	if err != nil {
		return err
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		return err
	}
	if _, err := op.NewFramework(framework.Config{
		Name:              operatorName,
		Informer:          inf,
		ResourceRouter:    rt,
		Resource:          configMapGVR,
		Workers:           o.workers,
		DisableFinalizers: true,
	}); err != nil {
		return err
	}
	if err := ext.register(op.Registry()); err != nil {
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- op.Run(ctx) }()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for op.MetricsURL() == "" {
		select {
		case err := <-errc:
			return errors.Join(errors.New("Run returned before the metrics endpoint opened"), err)
		case <-t.C:
		}
	}
	fmt.Printf("LISTEN %s\n", op.MetricsURL())
	return <-errc
}

// externalCall is the Framework's one resource: EnsureCreated waits as long
// as a call to an external system would, and counts the objects reconciled.
type externalCall struct {
	wait time.Duration

	seen      sync.Map // keys reconciled at least once
	distinct  atomic.Int64
	total     atomic.Int64
	deletes   atomic.Int64
	lastFirst atomic.Int64 // unix nanoseconds of the latest first reconciliation
}

var _ resource.Interface = (*externalCall)(nil)

func (e *externalCall) Name() string { return "external" }

func (e *externalCall) EnsureCreated(ctx context.Context, obj any) error {
	t := time.NewTimer(e.wait)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	e.total.Add(1)
	if _, loaded := e.seen.LoadOrStore(m.GetNamespace()+"/"+m.GetName(), struct{}{}); !loaded {
		e.distinct.Add(1)
		now := time.Now().UnixNano()
		for {
			last := e.lastFirst.Load()
			if now <= last || e.lastFirst.CompareAndSwap(last, now) {
				break
			}
		}
	}
	return nil
}

// EnsureDeleted only counts: a moved object must not run it on its old
// owner.
func (e *externalCall) EnsureDeleted(context.Context, any) error {
	e.deletes.Add(1)
	return nil
}

// The replica's own metrics, read by the driver.
const (
	metricReconciled      = "shardbench_reconciled_objects"
	metricReconciliations = "shardbench_reconciliations_total"
	metricDeletes         = "shardbench_delete_chains_total"
	metricLastFirst       = "shardbench_last_first_reconcile_timestamp_seconds"
	metricHeapLive        = "shardbench_heap_live_bytes"
)

func (e *externalCall) register(reg prometheus.Registerer) error {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var mu sync.Mutex
	for _, c := range []prometheus.Collector{
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricReconciled, Help: "Objects reconciled at least once by this replica."},
			func() float64 { return float64(e.distinct.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricReconciliations, Help: "Reconciliations (EnsureCreated) of this replica."},
			func() float64 { return float64(e.total.Load()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: metricDeletes, Help: "Delete chains (EnsureDeleted) of this replica."},
			func() float64 { return float64(e.deletes.Load()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricLastFirst, Help: "Unix time of the latest first reconciliation of an object."},
			func() float64 { return float64(e.lastFirst.Load()) / 1e9 }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: metricHeapLive, Help: "Live heap as of the last garbage collection."},
			func() float64 {
				mu.Lock()
				defer mu.Unlock()
				metrics.Read(sample)
				return float64(sample[0].Value.Uint64())
			}),
	} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
