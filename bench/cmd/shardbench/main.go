// Command shardbench measures the sharding of package operator
// (operator.Config.Sharding) for docs/scaling.md.
//
// It starts a real API server with testenv and, for each replica count N
// of -replicas, runs N replicas of a small operator as separate processes
// (this binary re-executed with SHARDBENCH_REPLICA=1), each a sharded
// Operator with one Framework over the ConfigMaps of a fresh namespace,
// whose one resource waits -external per reconciliation (an external
// call). It creates -objects ConfigMaps at once and measures:
//
//   - burst convergence: from the first create until every object was
//     reconciled once (the latest first reconciliation, timestamped by the
//     replicas themselves);
//   - per replica, once the burst is over: RSS (VmRSS), the live heap after
//     two forced garbage collections (the second empties the sync.Pools),
//     and the objects it owns (-heap-profiles: and its heap profile);
//   - for N > 1, scale-out: one more replica starts; the time until the
//     leader counts it as a member, until the shard labels settle (every
//     object labelled for a live member, none draining, for 2 s — read
//     with a metadata informer in the driver), and until the new replica
//     reconciled its share; the moves and hand-over durations from the
//     leader's metrics (operatorkit_shard_moves_total,
//     operatorkit_shard_handover_duration_seconds);
//   - scale-in: that replica stops cleanly (SIGTERM); the time until its
//     objects are labelled for the others again.
//
// By default it first runs one replica without sharding, as the reference
// for what sharding costs, and repeats everything -repeat times. It prints
// Markdown tables, with the CPU time that other processes used meanwhile
// (the machine may be shared).
//
//	cd bench && go run ./cmd/shardbench
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/testenv"
)

// options are the driver's flags.
type options struct {
	replicas          []int
	objects           int
	external          time.Duration
	workers           int
	repeat            int
	assignWorkers     int
	dataBytes         int
	createConcurrency int
	qps               float64
	burst             int
	baseline          bool
	handover          bool
	warmup            int
	settle            time.Duration
	window            time.Duration
	timeout           time.Duration
	leaseDuration     time.Duration
	renewDeadline     time.Duration
	retryPeriod       time.Duration
	logDir            string
	logLevel          string
	quiet             float64
	quietWait         time.Duration
	markdown          string
	heapProfiles      string
	children          string
}

func main() {
	if os.Getenv(replicaEnv) == "1" {
		if err := replicaMain(os.Args[1:]); err != nil {
			fmt.Fprintln(os.Stderr, "shardbench replica:", err)
			os.Exit(1)
		}
		return
	}
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "shardbench:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var o options
	replicas := flag.String("replicas", "1,2,3", "replica counts to measure, in order")
	flag.IntVar(&o.objects, "objects", 3000, "ConfigMaps created in one burst")
	flag.DurationVar(&o.external, "external", 50*time.Millisecond, "wait of each reconciliation (a call to an external system)")
	flag.IntVar(&o.workers, "workers", 16, "Framework workers per replica")
	flag.IntVar(&o.repeat, "repeat", 3, "runs of each replica count; the tables show the run with the median convergence")
	flag.IntVar(&o.assignWorkers, "assign-workers", 0, "Sharding.AssignWorkers of the replicas (0: operator.DefaultShardAssignWorkers)")
	flag.IntVar(&o.dataBytes, "data-bytes", 512, "bytes of data in each ConfigMap")
	flag.IntVar(&o.createConcurrency, "create-concurrency", 32, "concurrent creates of the driver")
	flag.Float64Var(&o.qps, "kube-api-qps", 1000, "client-side rate limit of each replica's clients (the operator package's default is 50)")
	flag.IntVar(&o.burst, "kube-api-burst", 2000, "client-side burst of each replica's clients (the operator package's default is 100)")
	flag.BoolVar(&o.baseline, "baseline", true, "first measure one replica without sharding")
	flag.BoolVar(&o.handover, "handover", true, "for N > 1, measure a scale-out to N+1 and back")
	flag.IntVar(&o.warmup, "warmup", 500, "ConfigMaps created and deleted before the first measurement, so that it does not meet a cold API server (0: none)")
	flag.DurationVar(&o.settle, "settle", 3*time.Second, "wait after the burst before reading memory")
	flag.DurationVar(&o.window, "stable", 2*time.Second, "how long the shard labels must stay settled to count as settled")
	flag.DurationVar(&o.timeout, "timeout", 5*time.Minute, "longest wait for one phase")
	flag.DurationVar(&o.leaseDuration, "lease-duration", 3*time.Second, "Config.LeaseDuration of the replicas")
	flag.DurationVar(&o.renewDeadline, "renew-deadline", 2*time.Second, "Config.RenewDeadline of the replicas")
	flag.DurationVar(&o.retryPeriod, "retry-period", 250*time.Millisecond, "Config.RetryPeriod of the replicas")
	flag.StringVar(&o.logDir, "logdir", "", "directory for the replicas' logs (default: a temporary directory)")
	flag.Float64Var(&o.quiet, "quiet", 0.3, "before each burst and scale-out, wait until the machine's other processes use fewer CPU cores than this over a second (0: do not wait)")
	flag.DurationVar(&o.quietWait, "quiet-wait", 3*time.Minute, "longest wait for -quiet; then measure anyway")
	flag.StringVar(&o.logLevel, "log-level", "info", "log level of the replicas (debug logs every assignment and hand-over)")
	flag.StringVar(&o.markdown, "markdown", "", "also write the tables to this file")
	flag.StringVar(&o.heapProfiles, "heap-profiles", "", "write each replica's heap profile (after the collections of each memory reading) into this directory")
	flag.StringVar(&o.children, "children", childrenNone, "a child Secret per ConfigMap, written by a child resource: "+childrenNone+", "+childrenSharded+" (Sharding.Children: each replica caches its share's) or "+childrenAll+" (each replica caches every child)")
	flag.Parse()
	if !slices.Contains([]string{childrenNone, childrenSharded, childrenAll}, o.children) {
		return fmt.Errorf("-children: %q is none of %s, %s and %s", o.children, childrenNone, childrenSharded, childrenAll)
	}

	for _, s := range strings.Split(*replicas, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			return fmt.Errorf("-replicas: %q is not a positive number", s)
		}
		o.replicas = append(o.replicas, n)
	}
	if o.objects < 1 || o.workers < 1 || o.createConcurrency < 1 || o.repeat < 1 {
		return fmt.Errorf("-objects, -workers, -create-concurrency and -repeat must be positive")
	}
	if o.logDir == "" {
		var err error
		if o.logDir, err = os.MkdirTemp("", "shardbench-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(o.logDir, 0o755); err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	began := time.Now()
	logf("machine: %s", proc.Machine())
	logf("replica logs in %s", o.logDir)
	logf("starting the API server (the first start builds it, which may take minutes)")
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	b, err := newBench(env, o)
	if err != nil {
		return err
	}
	if err := b.warm(ctx); err != nil {
		return err
	}
	// Repetitions go round the replica counts, so that a disturbance (a
	// busy machine) does not hit all runs of one count.
	var results []*result
	for rep := 1; rep <= o.repeat; rep++ {
		if o.baseline {
			r, err := b.run(ctx, 1, false, rep)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
		for _, n := range o.replicas {
			r, err := b.run(ctx, n, true, rep)
			if err != nil {
				return err
			}
			results = append(results, r)
		}
	}
	out := report(o, results, time.Since(began))
	fmt.Print(out)
	if o.markdown != "" {
		return os.WriteFile(o.markdown, []byte(out), 0o644)
	}
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
}
