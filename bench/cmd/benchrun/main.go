// Command benchrun is the driver of the side-by-side benchmark: it starts a
// real kube-apiserver with testenv (a child process), installs the Item CRD,
// and runs each contender (bench/cmd/contender: operatorkit,
// operatorkit-readme, controller-runtime, limit; limit-ready when named) as
// a child process through the phases create, burst, steady and delete, for
// each item count and worker count, repeated. It prints a table of medians
// (min..max) with the ratios operatorkit/controller-runtime,
// operatorkit/limit and operatorkit-readme/limit (and each operatorkit
// contender's to limit-ready when it ran), and can write it as markdown and
// the raw results as JSON.
//
// The API server with this driver and the contender are pinned to different
// CPUs unless --pin=false. See docs/benchmarks.md for what each figure
// means.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/testenv"
)

// The contender kinds (the --kind values of the contender binary).
const (
	kindOperatorkit       = "operatorkit"
	kindOperatorkitReadme = "operatorkit-readme"
	kindControllerRuntime = "controller-runtime"
	kindLimit             = "limit"
	kindLimitReady        = "limit-ready"
)

// defaultKinds are the contenders of a run without --contenders, in order.
var defaultKinds = []string{kindOperatorkit, kindOperatorkitReadme, kindControllerRuntime, kindLimit}

// allKinds are the contenders benchrun knows: the default ones and
// limit-ready (the limit that also keeps a Ready condition, as the
// Framework's Config.Conditions does), which runs only when named.
var allKinds = append(slices.Clone(defaultKinds), kindLimitReady)

type options struct {
	contenderBin      string
	contenders        []string
	runs              []runSize
	repeat            int
	phases            []string
	pin               bool
	driverCPU         int
	contenderCPU      int
	okitArgs          []string
	phaseTimeout      time.Duration
	settle            time.Duration
	driverConcurrency int
	logDir            string
	profileDir        string
	memProfileDir     string
	markdown          string
	dumpMetrics       bool
	steadyRounds      int
	warmup            int
	jsonOut           string
}

// runSize is one (N, workers) combination.
type runSize struct{ N, Workers int }

func main() {
	if err := mainErr(); err != nil {
		fmt.Fprintln(os.Stderr, "benchrun:", err)
		os.Exit(1)
	}
}

func mainErr() error {
	var (
		o          options
		contenders = flag.String("contenders", strings.Join(defaultKinds, ","), "contenders to run, in order (also known: "+kindLimitReady+")")
		ns         = flag.String("n", "1000,3000", "numbers of Items (crossed with --workers unless --runs is set)")
		workers    = flag.String("workers", "1,4,16", "worker counts (crossed with --n unless --runs is set)")
		runs       = flag.String("runs", "", "explicit N x workers combinations, e.g. 1000x1,1000x4,3000x4 (overrides --n and --workers)")
		phases     = flag.String("phases", strings.Join(allPhases, ","), "phases to run, in order (create must come first)")
		reportFrom = flag.String("report-from", "", "render the tables of an earlier --json file and exit (starts nothing)")
		quick      = flag.Bool("quick", os.Getenv("BENCH_QUICK") == "1", "quick mode (also BENCH_QUICK=1): --runs 200x4 --repeat 1")
	)
	flag.StringVar(&o.contenderBin, "contender", "", "contender binary (default: \"contender\" next to this binary)")
	flag.IntVar(&o.repeat, "repeat", 3, "repetitions of every run")
	flag.BoolVar(&o.pin, "pin", true, "pin the API server and the contender to different CPUs")
	okitArgs := flag.String("okit-args", "", "extra space-separated flags for the (tuned) operatorkit contender, not operatorkit-readme, e.g. \"--items=transform --status=merge --trace-objects=-1 --run-superseded\"")
	flag.DurationVar(&o.phaseTimeout, "phase-timeout", 10*time.Minute, "longest wait for one phase to converge")
	flag.DurationVar(&o.settle, "settle", 600*time.Millisecond, "after a phase converged, count the contender's requests and reconciles until they stop moving for this long")
	flag.IntVar(&o.driverConcurrency, "driver-concurrency", 8, "concurrent requests of the driver when it creates and updates Items")
	flag.StringVar(&o.logDir, "logdir", "", "directory for contender logs (default: a temporary directory)")
	flag.StringVar(&o.profileDir, "cpuprofile-dir", "", "write a CPU profile of every contender run into this directory")
	flag.StringVar(&o.memProfileDir, "memprofile-dir", "", "write a heap profile of every contender run, taken when its last phase ended (the live heap, after a collection), into this directory")
	flag.IntVar(&o.steadyRounds, "steady-rounds", 50, "rounds of the steady phase: each re-enqueues every Item once")
	flag.IntVar(&o.warmup, "warmup", 200, "Items of an unmeasured run of the first contender before the measured ones, so that no contender meets a cold API server (0: none)")
	flag.BoolVar(&o.dumpMetrics, "dump-metrics", false, "save the contender's /metrics after every phase into --logdir")
	flag.StringVar(&o.markdown, "markdown", "", "also write the results as markdown to this file")
	flag.StringVar(&o.jsonOut, "json", "", "also write every phase result as JSON to this file")
	flag.Parse()
	if *reportFrom != "" {
		return render(*reportFrom, o.markdown)
	}

	o.okitArgs = strings.Fields(*okitArgs)
	o.contenders = splitList(*contenders)
	for _, c := range o.contenders {
		if !slices.Contains(allKinds, c) {
			return fmt.Errorf("unknown contender %q (want one of %s)", c, strings.Join(allKinds, ", "))
		}
	}
	o.phases = splitList(*phases)
	if len(o.phases) == 0 || o.phases[0] != PhaseCreate {
		return fmt.Errorf("--phases must start with %s", PhaseCreate)
	}
	for _, p := range o.phases {
		if !slices.Contains(allPhases, p) {
			return fmt.Errorf("unknown phase %q", p)
		}
	}
	if *quick {
		*runs, o.repeat = "200x4", 1
	}
	var err error
	if o.runs, err = parseRuns(*runs, *ns, *workers); err != nil {
		return err
	}
	if o.steadyRounds < 1 {
		return fmt.Errorf("--steady-rounds must be at least 1")
	}
	if o.settle <= 0 {
		return fmt.Errorf("--settle must be positive, got %s", o.settle)
	}
	if o.repeat < 1 {
		return fmt.Errorf("--repeat must be at least 1")
	}
	if o.contenderBin == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		o.contenderBin = filepath.Join(filepath.Dir(exe), "contender")
	}
	if _, err := os.Stat(o.contenderBin); err != nil {
		return fmt.Errorf("contender binary: %w (build it with: go build -o DIR/contender ./cmd/contender)", err)
	}
	if o.logDir == "" {
		if o.logDir, err = os.MkdirTemp("", "benchrun-logs-"); err != nil {
			return err
		}
	}
	for _, d := range []string{o.logDir, o.profileDir, o.memProfileDir} {
		if d != "" {
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
		}
	}

	if o.pin && proc.NumCPU() < 2 {
		logf("only %d CPU available: running unpinned", proc.NumCPU())
		o.pin = false
	}
	if o.pin {
		// Pin before the API server starts: its process, and every thread,
		// inherits the mask of the thread that creates it.
		o.driverCPU, o.contenderCPU = 0, 1
		if err := proc.PinSelf([]int{o.driverCPU}); err != nil {
			return fmt.Errorf("pin the driver: %w", err)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return bench(ctx, o)
}

func bench(ctx context.Context, o options) error {
	m := machineInfo(o)
	logf("machine: %s", m)
	logf("starting the API server")
	// No deadline of its own: the first build of the server program takes
	// minutes on an empty cache, and the start is bounded by
	// testenv.Options.StartTimeout.
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	if o.pin {
		// Threads started meanwhile inherited the mask; pin again for any
		// that raced with the first call, and the API server process with
		// its threads.
		if err := proc.PinSelf([]int{o.driverCPU}); err != nil {
			return err
		}
		if err := proc.Pin(env.PID(), []int{o.driverCPU}); err != nil {
			return fmt.Errorf("pin the API server: %w", err)
		}
	}

	r := &runner{opts: o, driverCounter: requestcount.New(), serverPID: env.PID()}
	r.kubeconfig = filepath.Join(o.logDir, "kubeconfig")
	if err := env.WriteKubeconfig(r.kubeconfig); err != nil {
		return err
	}
	cfg := r.driverCounter.Wrap(env.Config())
	if r.kube, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	if r.items, err = item.NewClient(cfg); err != nil {
		return err
	}
	// Metrics scrapes go through an uncounted client.
	mk, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		return err
	}
	r.metricsClient = mk.CoreV1().RESTClient()

	if err := item.InstallCRD(ctx, env.Config()); err != nil {
		return err
	}

	if r.idleRSS, err = r.measureIdle(ctx); err != nil {
		return fmt.Errorf("measure the idle contender: %w", err)
	}
	logf("idle contender: peak RSS %s; logs in %s", mib(r.idleRSS), o.logDir)

	if o.warmup > 0 {
		// A fresh API server is slow for its first seconds of Item
		// traffic (the new CRD's handlers and OpenAPI, etcd): that run is
		// not measured.
		logf("warm-up: %s N=%d, not measured", o.contenders[0], o.warmup)
		if _, err := r.run(ctx, runSpec{Contender: o.contenders[0], N: o.warmup, Workers: 4}); err != nil {
			return fmt.Errorf("warm-up run: %w", err)
		}
	}

	var results []phaseResult
	var failures []string
	start := time.Now()
	for rep := 1; rep <= o.repeat; rep++ {
		for _, size := range o.runs {
			// Rotate the contenders' order between repetitions so that
			// none always runs first (on a cold or a warm server).
			order := slices.Clone(o.contenders)
			k := (rep - 1) % len(order)
			order = append(order[k:], order[:k]...)
			for _, kind := range order {
				spec := runSpec{Contender: kind, N: size.N, Workers: size.Workers, Rep: rep}
				logf("run %d/%d: %s N=%d workers=%d", rep, o.repeat, kind, size.N, size.Workers)
				res, err := r.run(ctx, spec)
				results = append(results, res...)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					logf("FAILED: %v", err)
					failures = append(failures, err.Error())
				}
			}
		}
	}
	elapsed := time.Since(start)

	rep := report{machine: m, command: commandLine(), opts: o, idleRSS: r.idleRSS, results: results, elapsed: elapsed, failures: failures}
	fmt.Println()
	fmt.Print(rep.text())
	if o.markdown != "" {
		if err := os.WriteFile(o.markdown, []byte(rep.markdown()), 0o644); err != nil {
			return err
		}
		logf("markdown written to %s", o.markdown)
	}
	if o.jsonOut != "" {
		b, err := json.MarshalIndent(rep.saved(), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(o.jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("%d run(s) failed", len(failures))
	}
	return nil
}

// render prints the tables of a saved report, and writes them as markdown
// when markdown is not empty.
func render(path, markdown string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	var s savedReport
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	rep := s.report()
	fmt.Print(rep.text())
	if markdown != "" {
		return os.WriteFile(markdown, []byte(rep.markdown()), 0o644)
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseRuns(runs, ns, workers string) ([]runSize, error) {
	var out []runSize
	if runs != "" {
		for _, r := range splitList(runs) {
			a, b, ok := strings.Cut(r, "x")
			n, err1 := strconv.Atoi(a)
			w, err2 := strconv.Atoi(b)
			if !ok || err1 != nil || err2 != nil || n < 1 || w < 1 {
				return nil, fmt.Errorf("--runs: %q is not NxWORKERS", r)
			}
			out = append(out, runSize{N: n, Workers: w})
		}
		return out, nil
	}
	for _, a := range splitList(ns) {
		n, err := strconv.Atoi(a)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("--n: %q is not a positive number", a)
		}
		for _, b := range splitList(workers) {
			w, err := strconv.Atoi(b)
			if err != nil || w < 1 {
				return nil, fmt.Errorf("--workers: %q is not a positive number", b)
			}
			out = append(out, runSize{N: n, Workers: w})
		}
	}
	return out, nil
}

func commandLine() string {
	args := []string{"benchrun"}
	for _, a := range os.Args[1:] {
		if strings.ContainsAny(a, " \t'\"") {
			a = strconv.Quote(a)
		}
		args = append(args, a)
	}
	return strings.Join(args, " ")
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05")+" "+format+"\n", args...)
}

// machineInfo describes the machine in one line, with the CPU pinning.
func machineInfo(o options) string {
	pin := "unpinned"
	if o.pin {
		pin = fmt.Sprintf("API server+driver pinned to CPU %d, contender to CPU %d", o.driverCPU, o.contenderCPU)
	}
	return proc.Machine() + ", " + pin
}
