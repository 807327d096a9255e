// Command contender runs one of the benchmark's operators for Items in one
// namespace: the same operator written with operatorkit (tuned, and
// operatorkit-readme: only what the README and the getting-started guide
// show), with controller-runtime, and with plain client-go doing only the
// necessary writes (the limit; limit-ready also keeps the Ready condition
// the Framework writes). benchrun starts it as a child process and
// talks to it through the protocol of package stats; it never links the API
// server.
//
// Usage:
//
//	contender --kind operatorkit|operatorkit-readme|controller-runtime|limit|limit-ready --kubeconfig PATH \
//	    --namespace NS [--workers N] [--cpus 1] [--cpuprofile FILE] [--qps 1000 --burst 2000]
//	contender --idle
//
// --idle starts nothing but the stats listener: the driver measures its
// memory as the baseline of the binary.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"os/signal"
	"runtime"
	runtimepprof "runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/bench/internal/stats"
	"github.com/operatorkit/operatorkit/requestcount"
)

// The contender kinds.
const (
	KindOperatorkit       = "operatorkit"
	KindOperatorkitReadme = "operatorkit-readme"
	KindControllerRuntime = "controller-runtime"
	KindLimit             = "limit"
	KindLimitReady        = "limit-ready"
)

type runner interface {
	stats.Contender
	Run(ctx context.Context) error
}

func main() {
	// An own flag set: controller-runtime registers --kubeconfig on the
	// global one in an init function.
	fs := flag.NewFlagSet("contender", flag.ExitOnError)
	var (
		kind       = fs.String("kind", "", "contender: operatorkit, operatorkit-readme, controller-runtime, limit or limit-ready")
		kubeconfig = fs.String("kubeconfig", "", "kubeconfig of the API server")
		namespace  = fs.String("namespace", "", "namespace of the Items")
		workers    = fs.Int("workers", 1, "concurrent reconciliations")
		listen     = fs.String("listen", "127.0.0.1:0", "address of the stats listener")
		cpus       = fs.String("cpus", "", "comma-separated CPUs to pin the process to (empty: no pinning)")
		idle       = fs.Bool("idle", false, "connect nothing; only serve the stats listener (memory baseline)")
		items      = fs.String("items", "typed", "operatorkit: how the Item informer reads Items: typed (informer.Config.RESTConfig with ObjectType), rest-client (informer.Config.RESTClient from informer.NewRESTClient, with a scheme), transform (dynamic client, converted in a Transform) or unstructured")
		cmInformer = fs.String("configmap-informer", "typed", "operatorkit: how the ConfigMap informer reads ConfigMaps: typed (informer.Config.RESTConfig with ObjectType, protobuf) or rest-client (the clientset's CoreV1().RESTClient() as informer.Config.RESTClient)")
		superseded = fs.Bool("run-superseded", false, "operatorkit: framework.Config.RunSuperseded (run the whole chain for a generation the cache has already replaced)")
		status     = fs.String("status", "conditions", "operatorkit: how status.observedGeneration is written: conditions (framework.Config.Conditions, server-side apply), merge-precondition or merge (a resource's merge patch with or without a resourceVersion precondition)")
		configMap  = fs.String("configmap", "child", "operatorkit: how the ConfigMap is kept: child (resource/child, server-side apply) or crud (hand-written crud.Ops with create and update)")
		traceObjs  = fs.Int("trace-objects", 0, "operatorkit: framework.Config.TraceObjects (0: the Framework's default, -1: no traces)")
		cpuprofile = fs.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
		debug      = fs.Bool("pprof", false, "serve /debug/pprof/ on the stats listener")
		qps        = fs.Float64("qps", 1000, "client-side rate limit of every client (requests per second)")
		burst      = fs.Int("burst", 2000, "client-side burst of every client")
	)
	_ = fs.Parse(os.Args[1:])
	klog.SetOutput(os.Stderr)

	if *cpus != "" {
		var list []int
		for _, s := range strings.Split(*cpus, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				stats.Fatalf("--cpus %q: %v", *cpus, err)
			}
			list = append(list, c)
		}
		if err := proc.PinSelf(list); err != nil {
			stats.Fatalf("pin: %v", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	counter := requestcount.New()
	srv, err := stats.Listen(*listen, counter)
	if err != nil {
		stats.Fatalf("%v", err)
	}
	if *debug {
		mux := srv.Mux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ctx) }()

	if *idle {
		runtime.GC()
		if err := srv.Announce(os.Stdout); err != nil {
			stats.Fatalf("announce: %v", err)
		}
		<-ctx.Done()
		return
	}

	if *kubeconfig == "" || *namespace == "" {
		stats.Fatalf("--kubeconfig and --namespace are required")
	}
	if *workers < 1 {
		stats.Fatalf("--workers must be at least 1")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		stats.Fatalf("load kubeconfig: %v", err)
	}
	// A kubeconfig carries no rate limit; client-go's default (5 QPS) would
	// make the contender, not the API server, the bottleneck.
	cfg.QPS, cfg.Burst = float32(*qps), *burst
	cfg = counter.Wrap(cfg)

	var r runner
	switch *kind {
	case KindOperatorkit:
		r, err = newOperatorkit(cfg, *namespace, *workers, okitOptions{items: *items, configMapInformer: *cmInformer, status: *status, configMap: *configMap, traceObjects: *traceObjs, runSuperseded: *superseded})
	case KindOperatorkitReadme:
		r, err = newOperatorkitReadme(cfg, *namespace, *workers)
	case KindControllerRuntime:
		r, err = newCRT(cfg, *namespace, *workers)
	case KindLimit:
		r, err = newLimit(cfg, *namespace, *workers, false)
	case KindLimitReady:
		r, err = newLimit(cfg, *namespace, *workers, true)
	default:
		err = fmt.Errorf("unknown --kind %q", *kind)
	}
	if err != nil {
		stats.Fatalf("%s: %v", *kind, err)
	}
	srv.SetContender(r)
	if m, ok := r.(interface{ Metrics() http.Handler }); ok {
		srv.Mux().Handle("GET /metrics", m.Metrics())
	}

	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			stats.Fatalf("cpuprofile: %v", err)
		}
		if err := runtimepprof.StartCPUProfile(f); err != nil {
			stats.Fatalf("cpuprofile: %v", err)
		}
		defer func() {
			runtimepprof.StopCPUProfile()
			_ = f.Close()
		}()
	}
	if err := srv.Announce(os.Stdout); err != nil {
		stats.Fatalf("announce: %v", err)
	}
	if err := r.Run(ctx); err != nil && ctx.Err() == nil {
		stats.Fatalf("%s: %v", *kind, err)
	}
	<-serveErr
}
