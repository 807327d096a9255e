package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/requestcount"
)

// The phases, in the order they run.
const (
	PhaseCreate = "create"
	PhaseBurst  = "burst"
	PhaseSteady = "steady"
	PhaseDelete = "delete"
)

var allPhases = []string{PhaseCreate, PhaseBurst, PhaseSteady, PhaseDelete}

// runner runs contenders against one API server.
type runner struct {
	opts          options
	kubeconfig    string
	kube          kubernetes.Interface
	items         rest.Interface
	metricsClient rest.Interface
	driverCounter *requestcount.Counter
	idleRSS       int64
	nsSeq         atomic.Int64
	// serverPID is the API server's process, whose CPU time each phase
	// reads (it serves the contender's requests and the driver's).
	serverPID int
}

// runSpec is one run: one contender, one N, one worker count.
type runSpec struct {
	Contender string
	N         int
	Workers   int
	Rep       int
}

// phaseResult is what one phase of one run measured.
type phaseResult struct {
	runSpec
	Phase string
	// Wall is the time from the phase's first action until the driver saw
	// the expected state.
	Wall time.Duration
	// Settle is the extra time until the contender's counters stopped
	// moving (its requests and reconciles are counted until then).
	Settle       time.Duration
	Writes       int64
	ClientErrors int64
	ByVerb       map[string]int64
	ByCode       map[int]int64
	Reconciles   int64
	// CPUSeconds is the contender's user+system CPU time from
	// /proc/<pid>/stat (10 ms resolution).
	CPUSeconds float64
	// PreciseCPUSeconds is the same from the contender's getrusage
	// (microsecond resolution); CPU per reconcile uses it.
	PreciseCPUSeconds float64
	PeakRSS           int64
	RSSAboveIdle      int64
	// ServerWrites and ServerClientErrors are the API server's own counts
	// for items and configmaps, minus the driver's requests.
	ServerWrites       int64
	ServerClientErrors int64
	ServerByVerb       map[string]int64
	// ServerEventWrites is the API server's count of Event writes (the
	// driver writes none): the part of Writes that is not items or
	// configmaps.
	ServerEventWrites int64
	// ServerCPUSeconds is the API server process's user+system CPU time
	// in the phase (10 ms resolution): the cost of the contender's
	// requests to the server, plus the driver's (the same for every
	// contender) and the watches of everyone connected.
	ServerCPUSeconds float64
}

// run runs every phase for spec in a namespace of its own, with the
// contender in a child process.
func (r *runner) run(ctx context.Context, spec runSpec) ([]phaseResult, error) {
	ns := fmt.Sprintf("bench-%d-%s-n%d-w%d", r.nsSeq.Add(1), shortKind(spec.Contender), spec.N, spec.Workers)
	if _, err := r.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace %s: %w", ns, err)
	}

	// The driver watches Items and ConfigMaps of the namespace to see
	// convergence without polling the API server.
	wctx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	itemInf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(r.items, item.Resource, ns, fields.Everything()), &item.Item{}, 0, cache.Indexers{})
	cmInf := informers.NewSharedInformerFactoryWithOptions(r.kube, 0, informers.WithNamespace(ns)).Core().V1().ConfigMaps().Informer()
	go itemInf.RunWithContext(wctx)
	go cmInf.RunWithContext(wctx)
	if !cache.WaitForCacheSync(ctx.Done(), itemInf.HasSynced, cmInf.HasSynced) {
		return nil, ctx.Err()
	}

	args := []string{"--kind", spec.Contender, "--kubeconfig", r.kubeconfig, "--namespace", ns, "--workers", strconv.Itoa(spec.Workers)}
	if r.opts.pin {
		args = append(args, "--cpus", strconv.Itoa(r.opts.contenderCPU))
	}
	if spec.Contender == kindOperatorkit {
		args = append(args, r.opts.okitArgs...)
	}
	if r.opts.profileDir != "" {
		args = append(args, "--cpuprofile", filepath.Join(r.opts.profileDir, ns+".pprof"))
	}
	cctx, stopChild := context.WithCancel(ctx)
	defer stopChild()
	c, err := startChild(cctx, r.opts.contenderBin, args, filepath.Join(r.opts.logDir, ns+".log"))
	if err != nil {
		return nil, err
	}
	defer c.stop()
	if err := c.waitReady(ctx, time.Minute); err != nil {
		return nil, fmt.Errorf("%s not ready: %w", spec.Contender, err)
	}

	w := &world{ns: ns, n: spec.N, items: itemInf.GetStore(), cms: cmInf.GetStore(),
		ready: spec.Contender == kindOperatorkitReadme || spec.Contender == kindLimitReady}
	var results []phaseResult
	for _, phase := range r.opts.phases {
		res, err := r.phase(ctx, c, spec, w, phase)
		if err != nil {
			return results, fmt.Errorf("%s %s phase in %s: %w", spec.Contender, phase, ns, err)
		}
		results = append(results, res)
		logf("  %-18s %-6s wall=%-8s writes=%-6d reconciles=%-6d 4xx=%-4d cpu=%.2fs peakRSS=%s", spec.Contender, phase,
			res.Wall.Round(time.Millisecond), res.Writes, res.Reconciles, res.ClientErrors, res.CPUSeconds, mib(res.PeakRSS))
	}
	if r.opts.memProfileDir != "" {
		if err := c.saveHeapProfile(filepath.Join(r.opts.memProfileDir, ns+".heap")); err != nil {
			return results, fmt.Errorf("%s in %s: %w", spec.Contender, ns, err)
		}
	}
	return results, nil
}

// world is the driver's view of one namespace.
type world struct {
	ns    string
	n     int
	items cache.Store
	cms   cache.Store
	// spec is the spec every Item has after the last write of the driver.
	spec item.Spec
	// ready: the contender keeps a Ready condition (operatorkit-readme,
	// limit-ready), which must be True for the Item's generation too.
	ready bool
}

// converged reports whether every one of the n Items has the driver's
// spec, a finalizer, status.observedGeneration equal to its generation (and
// a Ready condition True for it when w.ready) and its ConfigMap with the
// derived data.
func (w *world) converged() bool {
	objs := w.items.List()
	if len(objs) != w.n {
		return false
	}
	for _, obj := range objs {
		it := obj.(*item.Item)
		if it.Spec != w.spec || len(it.Finalizers) == 0 || it.Status.ObservedGeneration != it.Generation {
			return false
		}
		if w.ready && !readyFor(it) {
			return false
		}
		cm, ok, _ := w.cms.GetByKey(it.Namespace + "/" + it.Name)
		if !ok || !item.DataEqual(cm.(*corev1.ConfigMap).Data, it.Spec) {
			return false
		}
	}
	return true
}

// readyFor reports whether it has a Ready condition True for its generation.
func readyFor(it *item.Item) bool {
	c := meta.FindStatusCondition(it.Status.Conditions, "Ready")
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == it.Generation
}

// gone reports whether every Item and ConfigMap is gone.
func (w *world) gone() bool { return len(w.items.ListKeys()) == 0 && len(w.cms.ListKeys()) == 0 }

func (r *runner) phase(ctx context.Context, c *child, spec runSpec, w *world, phase string) (phaseResult, error) {
	res := phaseResult{runSpec: spec, Phase: phase}
	before, err := r.snapshot(ctx, c)
	if err != nil {
		return res, err
	}
	start := time.Now()
	var done func() (bool, error)
	switch phase {
	case PhaseCreate:
		w.spec = item.Spec{Message: "created", Count: 0}
		err = r.parallel(ctx, w.n, func(ctx context.Context, i int) error {
			it := &item.Item{TypeMeta: metav1.TypeMeta{APIVersion: item.GroupVersion.String(), Kind: item.Kind}, ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("item-%05d", i), Namespace: w.ns}, Spec: w.spec}
			return r.items.Post().Namespace(w.ns).Resource(item.Resource).Body(it).Do(ctx).Error()
		})
		done = func() (bool, error) { return w.converged(), nil }
	case PhaseBurst:
		const updates = 5
		w.spec = item.Spec{Message: "burst-" + strconv.Itoa(updates), Count: updates}
		err = r.parallel(ctx, w.n, func(ctx context.Context, i int) error {
			name := fmt.Sprintf("item-%05d", i)
			for k := 1; k <= updates; k++ {
				body := fmt.Appendf(nil, `{"spec":{"message":"burst-%d","count":%d}}`, k, k)
				if err := r.items.Patch(types.MergePatchType).Namespace(w.ns).Resource(item.Resource).Name(name).Body(body).Do(ctx).Error(); err != nil {
					return err
				}
			}
			return nil
		})
		done = func() (bool, error) { return w.converged(), nil }
	case PhaseSteady:
		// Several rounds, each waiting for the previous one, so that the
		// CPU per no-op reconcile is measured over enough reconciles.
		for round := 1; round <= r.opts.steadyRounds && err == nil; round++ {
			var n int
			if n, err = c.enqueueAll(); err == nil && n != w.n {
				err = fmt.Errorf("enqueue-all enqueued %d Items, want %d", n, w.n)
			}
			want := before.contender.Reconciles + int64(round*w.n)
			if err == nil && round < r.opts.steadyRounds {
				err = poll(ctx, r.opts.phaseTimeout, 5*time.Millisecond, func() (bool, error) {
					s, err := c.stats()
					return err == nil && s.Reconciles >= want, err
				})
			}
		}
		done = func() (bool, error) {
			s, err := c.stats()
			return err == nil && s.Reconciles-before.contender.Reconciles >= int64(r.opts.steadyRounds*w.n), err
		}
	case PhaseDelete:
		err = r.items.Delete().Namespace(w.ns).Resource(item.Resource).Do(ctx).Error()
		done = func() (bool, error) { return w.gone(), nil }
	default:
		err = fmt.Errorf("unknown phase %q", phase)
	}
	if err != nil {
		return res, err
	}
	if err := poll(ctx, r.opts.phaseTimeout, 10*time.Millisecond, func() (bool, error) {
		if err := c.Exited(); err != nil {
			return false, err
		}
		return done()
	}); err != nil {
		return res, fmt.Errorf("waiting for convergence: %w", err)
	}
	res.Wall = time.Since(start)

	// The contender may still react to its own last writes: count until
	// its requests and reconciles stop moving for --settle.
	var last [2]int64
	quietSince := time.Now()
	if err := poll(ctx, time.Minute, 100*time.Millisecond, func() (bool, error) {
		s, err := c.stats()
		if err != nil {
			return false, err
		}
		now := [2]int64{s.Reconciles, s.Requests.Total}
		if now != last {
			last, quietSince = now, time.Now()
			return false, nil
		}
		return time.Since(quietSince) >= r.opts.settle, nil
	}); err != nil {
		return res, fmt.Errorf("waiting for the contender to settle: %w", err)
	}
	res.Settle = time.Since(start) - res.Wall

	after, err := r.snapshot(ctx, c)
	if err != nil {
		return res, err
	}
	if r.opts.dumpMetrics {
		if err := c.saveMetrics(filepath.Join(r.opts.logDir, w.ns+"-"+phase+".metrics")); err != nil {
			logf("save the contender's metrics: %v", err)
		}
	}
	d := after.contender.Requests.Sub(before.contender.Requests)
	res.Writes, res.ClientErrors, res.ByVerb, res.ByCode = d.Writes, d.ClientErrors, d.ByVerb, d.ByCode
	res.Reconciles = after.contender.Reconciles - before.contender.Reconciles
	res.CPUSeconds = after.proc.CPUSeconds - before.proc.CPUSeconds
	res.ServerCPUSeconds = after.serverProc.CPUSeconds - before.serverProc.CPUSeconds
	res.PreciseCPUSeconds = after.contender.CPUSeconds - before.contender.CPUSeconds
	res.PeakRSS = after.proc.PeakRSSBytes
	res.RSSAboveIdle = after.proc.PeakRSSBytes - r.idleRSS
	srv := after.server.sub(before.server)
	drv := after.driver.Sub(before.driver)
	res.ServerWrites = srv.Writes - drv.Writes
	res.ServerClientErrors = srv.ClientErrors - drv.ClientErrors
	res.ServerEventWrites = srv.EventWrites
	res.ServerByVerb = srv.ByVerb
	for v, n := range drv.ByVerb {
		if res.ServerByVerb[v] -= n; res.ServerByVerb[v] == 0 {
			delete(res.ServerByVerb, v)
		}
	}
	return res, nil
}

// parallel calls f for 0..n-1 from r.opts.driverConcurrency goroutines and
// returns the first error.
func (r *runner) parallel(ctx context.Context, n int, f func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range r.opts.driverConcurrency {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := f(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// measureIdle starts the contender with --idle and returns its peak RSS.
func (r *runner) measureIdle(ctx context.Context) (int64, error) {
	args := []string{"--idle"}
	if r.opts.pin {
		args = append(args, "--cpus", strconv.Itoa(r.opts.contenderCPU))
	}
	c, err := startChild(ctx, r.opts.contenderBin, args, filepath.Join(r.opts.logDir, "idle.log"))
	if err != nil {
		return 0, err
	}
	defer c.stop()
	// Wait until the idle process's RSS stops moving.
	var last int64
	stable := 0
	err = poll(ctx, 10*time.Second, 100*time.Millisecond, func() (bool, error) {
		s, err := proc.Read(c.Pid())
		if err != nil {
			return false, err
		}
		if s.PeakRSSBytes == last {
			stable++
		} else {
			last, stable = s.PeakRSSBytes, 0
		}
		return stable >= 3, nil
	})
	return last, err
}

func shortKind(kind string) string {
	switch kind {
	case kindControllerRuntime:
		return "crt"
	case kindOperatorkit:
		return "okit"
	case kindOperatorkitReadme:
		return "readme"
	}
	return kind
}

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }
