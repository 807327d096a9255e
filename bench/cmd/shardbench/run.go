package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/testenv"
)

// bench runs the measurements against one API server.
type bench struct {
	o          options
	apiPID     int
	kubeconfig string
	kube       kubernetes.Interface
	md         metadata.Interface
	runs       int // runs started, for the namespace names
	profiles   int // memory readings with heap profiles, for their names
}

func newBench(env *testenv.Env, o options) (*bench, error) {
	kubeconfig := filepath.Join(o.logDir, "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		return nil, err
	}
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS = -1 // no client-side rate limit for the driver
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &bench{o: o, apiPID: env.PID(), kubeconfig: kubeconfig, kube: kube, md: md}, nil
}

// result is what one run (one replica count) measured.
type result struct {
	replicas    int
	sharded     bool
	rep         int // repetition, from 1
	objects     int
	create      time.Duration // until the last create returned
	assigned    time.Duration // sharded: until every object had a shard label
	converge    time.Duration // until every object was reconciled once
	duplicates  int           // first reconciliations beyond objects (an object reconciled by two replicas)
	members     []member
	scaleOut    *move
	scaleIn     *move
	deleteChain float64 // delete chains run (none expected)
	writes      float64 // ConfigMap PATCH requests the API server served during the burst
	cpu         cpuUse  // during the burst
}

// cpuUse is CPU time, in seconds, used between two readings.
type cpuUse struct {
	api, replicas, driver float64
	busy                  float64 // of the whole machine
	wall                  float64 // seconds between the readings (in a reading: since the Unix epoch)
}

// others is the CPU time the other processes of the machine used.
func (c cpuUse) others() float64 { return max(0, c.busy-c.api-c.replicas-c.driver) }

// member is one replica after the burst.
type member struct {
	identity   string
	leader     bool
	rss        int64
	heapLive   float64
	idleRSS    int64   // before the burst, with no object
	idleHeap   float64 // before the burst, with no object
	owned      float64
	reconciled float64 // objects reconciled at least once
	total      float64 // reconciliations
}

// move is a scale-out or scale-in.
type move struct {
	from, to   int
	join       time.Duration // scale-out: until the leader counted the new member
	settle     time.Duration // until the shard labels settled
	reconciled time.Duration // scale-out: until the new replica reconciled its share
	share      int           // objects of the new (or stopped) replica
	moved      float64       // operatorkit_shard_moves_total of the leader, delta
	handover   histogram     // operatorkit_shard_handover_duration_seconds of the leader, delta
	misplaced  int           // objects not on their ring owner once settled
	extra      float64       // reconciliations of the old owners meanwhile
	writes     float64       // ConfigMap PATCH requests the API server served until settled
	cpu        cpuUse        // scale-out: until settled
}

// warm creates and deletes o.warmup ConfigMaps, so that the first
// measurement does not meet a cold API server.
func (b *bench) warm(ctx context.Context) error {
	if b.o.warmup == 0 {
		return nil
	}
	const ns = "shardbench-warmup"
	logf("warm-up: %d ConfigMaps", b.o.warmup)
	if err := b.createNamespace(ctx, ns); err != nil {
		return err
	}
	if _, err := b.createObjects(ctx, ns, b.o.warmup); err != nil {
		return err
	}
	return b.deleteObjects(ctx, ns)
}

// run measures n replicas, sharded or not, in a fresh namespace.
func (b *bench) run(ctx context.Context, n int, sharded bool, rep int) (_ *result, err error) {
	b.runs++
	ns := fmt.Sprintf("shardbench-%d-n%d", b.runs, n)
	if !sharded {
		ns = fmt.Sprintf("shardbench-%d-unsharded", b.runs)
	}
	res := &result{replicas: n, sharded: sharded, rep: rep, objects: b.o.objects}
	logf("N=%d sharded=%t: namespace %s", n, sharded, ns)
	if err := b.createNamespace(ctx, ns); err != nil {
		return nil, err
	}
	var reps []*replica
	defer func() {
		if stopErr := stopAll(reps); stopErr != nil && err == nil {
			err = stopErr
		}
	}()
	for i := 1; i <= n; i++ {
		r, err := startReplica(b.replicaOptions(ns, fmt.Sprintf("r%d", i), sharded), b.o.logDir)
		if err != nil {
			return nil, err
		}
		reps = append(reps, r)
	}
	if err := b.waitReady(ctx, reps); err != nil {
		return nil, err
	}
	if sharded {
		if err := poll(ctx, b.o.timeout, 50*time.Millisecond, "the leader to count every replica", func() (bool, error) {
			ms, err := scrapeAll(reps)
			if err != nil {
				return false, err
			}
			_, members := leaderOf(ms)
			return members == n, nil
		}); err != nil {
			return nil, err
		}
	}

	// Memory with no object, after a garbage collection.
	idle, err := b.readMemory(reps, "idle")
	if err != nil {
		return nil, err
	}
	var objs *objectWatch
	if sharded {
		if objs, err = b.watchObjects(ctx, ns); err != nil {
			return nil, err
		}
		defer objs.stop()
	}

	// The burst.
	if err := b.waitQuiet(ctx, reps); err != nil {
		return nil, err
	}
	logf("N=%d: creating %d ConfigMaps", n, b.o.objects)
	patches0, err := b.configMapPatches(ctx)
	if err != nil {
		return nil, err
	}
	cpu0, err := b.cpuTimes(reps)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if res.create, err = b.createObjects(ctx, ns, b.o.objects); err != nil {
		return nil, err
	}
	logf("N=%d: created in %s; waiting for every object to be reconciled", n, res.create.Round(time.Millisecond))
	var last float64
	if err := poll(ctx, b.o.timeout, 200*time.Millisecond, "every object to be reconciled", func() (bool, error) {
		ms, err := scrapeAll(reps)
		if err != nil {
			return false, err
		}
		sum := 0.0
		last = 0
		for _, m := range ms {
			sum += m.value(metricReconciled)
			last = math.Max(last, m.value(metricLastFirst))
		}
		res.duplicates = int(sum) - b.o.objects
		return sum >= float64(b.o.objects), nil
	}); err != nil {
		return nil, err
	}
	res.converge = unixTime(last).Sub(start)
	cpu1, err := b.cpuTimes(reps)
	if err != nil {
		return nil, err
	}
	res.cpu = cpu1.minus(cpu0)
	patches1, err := b.configMapPatches(ctx)
	if err != nil {
		return nil, err
	}
	res.writes = patches1 - patches0
	if sharded {
		// The driver's watch may lag the replicas' a little.
		var at time.Time
		if err := poll(ctx, 10*time.Second, 20*time.Millisecond, "the driver to see every object labelled", func() (bool, error) {
			var labelled int
			at, labelled = objs.lastLabelled()
			return labelled >= b.o.objects, nil
		}); err != nil {
			return nil, err
		}
		res.assigned = at.Sub(start)
	}
	logf("N=%d: converged after %s (assigned after %s)", n, res.converge.Round(time.Millisecond), res.assigned.Round(time.Millisecond))

	// Steady state.
	time.Sleep(b.o.settle)
	mem, err := b.readMemory(reps, "after")
	if err != nil {
		return nil, err
	}
	ms := mem.metrics
	for i, r := range reps {
		m := member{
			identity:   r.identity,
			leader:     ms[i].value("operatorkit_shard_members") > 0,
			rss:        mem.rss[i],
			heapLive:   ms[i].value(metricHeapLive),
			idleRSS:    idle.rss[i],
			idleHeap:   idle.metrics[i].value(metricHeapLive),
			owned:      ms[i].value("operatorkit_shard_owned_objects"),
			reconciled: ms[i].value(metricReconciled),
			total:      ms[i].value(metricReconciliations),
		}
		if !sharded {
			m.owned = m.reconciled
		}
		res.members = append(res.members, m)
	}

	if sharded && b.o.handover && n > 1 {
		if err := b.scale(ctx, ns, objs.store, res, &reps); err != nil {
			return nil, err
		}
	}
	ms, err = scrapeAll(reps)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		res.deleteChain += m.value(metricDeletes)
	}
	if err := stopAll(reps); err != nil {
		return nil, err
	}
	reps = nil
	return res, b.deleteObjects(ctx, ns)
}

// scale measures the scale-out from len(*reps) replicas to one more, and
// the scale-in back when that one stops cleanly.
func (b *bench) scale(ctx context.Context, ns string, store cache.Store, res *result, reps *[]*replica) error {
	n := len(*reps)
	ms, err := scrapeAll(*reps)
	if err != nil {
		return err
	}
	li, _ := leaderOf(ms)
	if li < 0 {
		return errors.New("no replica leads")
	}
	leader := (*reps)[li]
	old := slices.Clone(*reps)
	live := identities(old)
	oldTotal := sumValue(ms, metricReconciliations)

	// Scale-out.
	out := &move{from: n, to: n + 1}
	id := fmt.Sprintf("r%d", n+1)
	movesBefore, histBefore := ms[li].value("operatorkit_shard_moves_total"), ms[li].histogram("operatorkit_shard_handover_duration_seconds")
	if err := b.waitQuiet(ctx, old); err != nil {
		return err
	}
	patches0, err := b.configMapPatches(ctx)
	if err != nil {
		return err
	}
	cpu0, err := b.cpuTimes(old)
	if err != nil {
		return err
	}
	logf("N=%d: scale-out: starting %s", n, id)
	t0 := time.Now()
	nr, err := startReplica(b.replicaOptions(ns, id, true), b.o.logDir)
	if err != nil {
		return err
	}
	*reps = append(*reps, nr)
	if err := poll(ctx, b.o.timeout, 50*time.Millisecond, "the leader to count the new replica", func() (bool, error) {
		m, err := leader.scrape()
		if err != nil {
			return false, err
		}
		return m.value("operatorkit_shard_members") == float64(n+1), nil
	}); err != nil {
		return err
	}
	out.join = time.Since(t0)
	settledAt, err := b.waitSettled(ctx, store, append(slices.Clone(live), id), id, *reps)
	if err != nil {
		return err
	}
	out.settle = settledAt.Sub(t0)
	cpu1, err := b.cpuTimes(*reps)
	if err != nil {
		return err
	}
	out.cpu = cpu1.minus(cpu0)
	counts, _, _ := labelCounts(store, nil)
	out.share = counts[id]
	patches1, err := b.configMapPatches(ctx)
	if err != nil {
		return err
	}
	out.writes = patches1 - patches0
	out.misplaced = misplaced(store, append(slices.Clone(live), id))
	var lastFirst float64
	if err := poll(ctx, b.o.timeout, 50*time.Millisecond, "the new replica to reconcile its share", func() (bool, error) {
		m, err := nr.scrape()
		if err != nil {
			return false, err
		}
		lastFirst = m.value(metricLastFirst)
		return m.value(metricReconciled) >= float64(out.share), nil
	}); err != nil {
		return err
	}
	out.reconciled = unixTime(lastFirst).Sub(t0)
	after, err := leader.scrape()
	if err != nil {
		return err
	}
	out.moved = after.value("operatorkit_shard_moves_total") - movesBefore
	out.handover = after.histogram("operatorkit_shard_handover_duration_seconds").minus(histBefore)
	msOld, err := scrapeAll(old)
	if err != nil {
		return err
	}
	out.extra = sumValue(msOld, metricReconciliations) - oldTotal
	res.scaleOut = out
	logf("N=%d: scale-out: join %s, settled %s, %d objects to %s", n, out.join.Round(time.Millisecond), out.settle.Round(time.Millisecond), out.share, id)

	// Scale-in: the new replica stops cleanly and leaves the ring.
	in := &move{from: n + 1, to: n, share: out.share}
	movesBefore = after.value("operatorkit_shard_moves_total")
	histBefore = after.histogram("operatorkit_shard_handover_duration_seconds")
	logf("N=%d: scale-in: stopping %s", n, id)
	if patches0, err = b.configMapPatches(ctx); err != nil {
		return err
	}
	t0 = time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- nr.stop() }()
	settledAt, err = b.waitSettled(ctx, store, live, "", old)
	if err != nil {
		return err
	}
	in.settle = settledAt.Sub(t0)
	in.misplaced = misplaced(store, live)
	if patches1, err = b.configMapPatches(ctx); err != nil {
		return err
	}
	in.writes = patches1 - patches0
	if err := <-stopped; err != nil {
		return fmt.Errorf("replica %s did not stop cleanly: %w; %s", id, err, nr.Tail())
	}
	*reps = old
	after, err = leader.scrape()
	if err != nil {
		return err
	}
	in.moved = after.value("operatorkit_shard_moves_total") - movesBefore
	in.handover = after.histogram("operatorkit_shard_handover_duration_seconds").minus(histBefore)
	res.scaleIn = in
	logf("N=%d: scale-in: settled %s", n, in.settle.Round(time.Millisecond))
	return nil
}

// waitSettled waits until the shard labels settle: every object is
// labelled for one of live and none carries the drain label, and, when
// needOwner is set, needOwner owns at least one object; all of this on
// every poll (every 50 ms) for o.window. It returns the time of the first
// poll of that window.
func (b *bench) waitSettled(ctx context.Context, store cache.Store, live []string, needOwner string, reps []*replica) (time.Time, error) {
	var since time.Time
	err := poll(ctx, b.o.timeout, 50*time.Millisecond, "the shard labels to settle", func() (bool, error) {
		for _, r := range reps {
			if err := r.Exited(); err != nil {
				return false, err
			}
		}
		now := time.Now()
		counts, drains, total := labelCounts(store, live)
		ok := drains == 0 && total == b.o.objects && counts[""] == 0 && (needOwner == "" || counts[needOwner] > 0)
		switch {
		case !ok:
			since = time.Time{}
		case since.IsZero():
			since = now
		}
		return ok && now.Sub(since) >= b.o.window, nil
	})
	return since, err
}

// labelCounts counts the objects in store by shard label, counting those
// labelled for none of live (when live is not nil) under "", and the
// objects with the drain label.
func labelCounts(store cache.Store, live []string) (counts map[string]int, drains, total int) {
	counts = map[string]int{}
	for _, obj := range store.List() {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok {
			continue
		}
		total++
		owner := m.Labels[shardLabel]
		if live != nil && !slices.Contains(live, owner) {
			owner = ""
		}
		counts[owner]++
		if _, ok := m.Labels[drainLabel]; ok {
			drains++
		}
	}
	return counts, drains, total
}

// misplaced counts the objects not labelled for their owner on the hash
// ring of members (operator.ShardOwner).
func misplaced(store cache.Store, members []string) int {
	objs := store.List()
	keys := make([]string, 0, len(objs))
	labels := map[string]string{}
	for _, obj := range objs {
		if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
			key := m.Namespace + "/" + m.Name
			keys = append(keys, key)
			labels[key] = m.Labels[shardLabel]
		}
	}
	n := 0
	for key, owner := range operator.ShardOwner(members, operator.DefaultVirtualNodes, keys...) {
		if labels[key] != owner {
			n++
		}
	}
	return n
}

// objectWatch is a metadata informer on the benchmark's ConfigMaps of one
// namespace, which also notes when each object was first seen with a
// shard label.
type objectWatch struct {
	store cache.Store
	stop  func()

	mu       sync.Mutex
	labelled map[string]bool
	last     time.Time // when the latest object was first seen labelled
}

// watchObjects runs an objectWatch on ns and returns it synced.
func (b *bench) watchObjects(ctx context.Context, ns string) (*objectWatch, error) {
	inf := metadatainformer.NewFilteredMetadataInformer(b.md, configMapGVR, ns, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector = objectLabel + "=true"
	}).Informer()
	w := &objectWatch{store: inf.GetStore(), labelled: map[string]bool{}}
	note := func(obj any) {
		m, ok := obj.(*metav1.PartialObjectMetadata)
		if !ok || m.Labels[shardLabel] == "" {
			return
		}
		now := time.Now()
		w.mu.Lock()
		defer w.mu.Unlock()
		if !w.labelled[m.Name] {
			w.labelled[m.Name], w.last = true, now
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
	}); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { inf.Run(ctx.Done()) })
	w.stop = func() { cancel(); wg.Wait() }
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		w.stop()
		return nil, errors.New("metadata informer of the ConfigMaps did not sync")
	}
	return w, nil
}

// lastLabelled returns when the latest object was first seen with a shard
// label, and how many objects were.
func (w *objectWatch) lastLabelled() (time.Time, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.last, len(w.labelled)
}

// memory is one reading of the replicas' memory.
type memory struct {
	rss     []int64
	metrics []metricSet // scraped after a garbage collection
}

// readMemory reads each replica's RSS, then makes it collect garbage
// (SIGUSR1) and scrapes its metrics, for the live heap.
// With -heap-profiles it also saves each replica's heap profile, named by
// the replica count, the replica, when and the reading's sequence number.
func (b *bench) readMemory(reps []*replica, when string) (memory, error) {
	var mem memory
	for _, r := range reps {
		s, err := proc.Read(r.Pid())
		if err != nil {
			return mem, err
		}
		mem.rss = append(mem.rss, s.RSSBytes)
		_ = r.Cmd.Process.Signal(syscall.SIGUSR1)
	}
	time.Sleep(time.Second)
	var err error
	mem.metrics, err = scrapeAll(reps)
	if err != nil || b.o.heapProfiles == "" {
		return mem, err
	}
	b.profiles++
	for _, r := range reps {
		path := filepath.Join(b.o.heapProfiles, fmt.Sprintf("n%d-%s-%s-%03d.pb.gz", len(reps), r.identity, when, b.profiles))
		if err := r.save("/debug/pprof/heap", path); err != nil {
			return mem, err
		}
	}
	return mem, nil
}

func (b *bench) replicaOptions(ns, identity string, sharded bool) replicaOptions {
	return replicaOptions{
		kubeconfig:    b.kubeconfig,
		namespace:     ns,
		identity:      identity,
		sharded:       sharded,
		workers:       b.o.workers,
		external:      b.o.external,
		assignWorkers: b.o.assignWorkers,
		qps:           b.o.qps,
		burst:         b.o.burst,
		leaseDuration: b.o.leaseDuration,
		renewDeadline: b.o.renewDeadline,
		retryPeriod:   b.o.retryPeriod,
		logLevel:      b.o.logLevel,
		pprof:         b.o.heapProfiles != "",
		children:      b.o.children,
	}
}

// waitReady waits for /readyz of every replica.
func (b *bench) waitReady(ctx context.Context, reps []*replica) error {
	for _, r := range reps {
		if err := poll(ctx, b.o.timeout, 20*time.Millisecond, "replica "+r.identity+" to be ready", r.ready); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) createNamespace(ctx context.Context, ns string) error {
	_, err := b.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	return err
}

// createObjects creates n ConfigMaps in ns, o.createConcurrency at a time,
// and returns how long that took.
func (b *bench) createObjects(ctx context.Context, ns string, n int) (time.Duration, error) {
	data := strings.Repeat("x", b.o.dataBytes)
	start := time.Now()
	next := make(chan int)
	errs := make(chan error, b.o.createConcurrency)
	var wg sync.WaitGroup
	for range b.o.createConcurrency {
		wg.Go(func() {
			for i := range next {
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("obj-%05d", i), Labels: map[string]string{objectLabel: "true"}},
					Data:       map[string]string{"payload": data},
				}
				if _, err := b.kube.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create ConfigMap %s/%s: %w", ns, cm.Name, err)
					return
				}
			}
		})
	}
	var err error
loop:
	for i := range n {
		select {
		case next <- i:
		case err = <-errs:
			break loop
		}
	}
	close(next)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return time.Since(start), err
}

func (b *bench) deleteObjects(ctx context.Context, ns string) error {
	return b.kube.CoreV1().ConfigMaps(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: objectLabel + "=true"})
}

// stopAll stops the replicas at the same time.
func stopAll(reps []*replica) error {
	errs := make([]error, len(reps))
	var wg sync.WaitGroup
	for i, r := range reps {
		wg.Go(func() {
			if err := r.stop(); err != nil {
				errs[i] = fmt.Errorf("replica %s: %w; %s", r.identity, err, r.Tail())
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// scrapeAll scrapes every replica.
func scrapeAll(reps []*replica) ([]metricSet, error) {
	ms := make([]metricSet, len(reps))
	for i, r := range reps {
		m, err := r.scrape()
		if err != nil {
			return nil, err
		}
		ms[i] = m
	}
	return ms, nil
}

// leaderOf returns the index of the replica whose assigner runs (its
// operatorkit_shard_members is not 0), or -1, and the members it counts.
func leaderOf(ms []metricSet) (int, int) {
	for i, m := range ms {
		if v := m.value("operatorkit_shard_members"); v > 0 {
			return i, int(v)
		}
	}
	return -1, 0
}

func sumValue(ms []metricSet, name string) float64 {
	sum := 0.0
	for _, m := range ms {
		sum += m.value(name)
	}
	return sum
}

func identities(reps []*replica) []string {
	ids := make([]string, len(reps))
	for i, r := range reps {
		ids[i] = r.identity
	}
	return ids
}

// unixTime converts Unix seconds, as a metric carries them, to a time.
func unixTime(secs float64) time.Time {
	sec, frac := math.Modf(secs)
	return time.Unix(int64(sec), int64(frac*1e9))
}

// configMapPatches reads from the API server's metrics how many PATCH
// requests on ConfigMaps it served.
func (b *bench) configMapPatches(ctx context.Context) (float64, error) {
	raw, err := b.kube.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return 0, fmt.Errorf("scrape the API server's metrics: %w", err)
	}
	ms, err := parseMetrics(raw)
	if err != nil {
		return 0, fmt.Errorf("parse the API server's metrics: %w", err)
	}
	return ms.value("apiserver_request_total", "resource", "configmaps", "verb", "PATCH"), nil
}

// cpuTimes reads the CPU time used so far by the API server (with its
// etcd), the replicas together, and this driver.
func (b *bench) cpuTimes(reps []*replica) (cpuUse, error) {
	c := cpuUse{wall: float64(time.Now().UnixNano()) / 1e9}
	s, err := proc.Read(b.apiPID)
	if err != nil {
		return c, err
	}
	c.api = s.CPUSeconds
	if s, err = proc.Read(os.Getpid()); err != nil {
		return c, err
	}
	c.driver = s.CPUSeconds
	if c.busy, err = machineBusy(); err != nil {
		return c, err
	}
	for _, r := range reps {
		if s, err = proc.Read(r.Pid()); err != nil {
			return c, err
		}
		c.replicas += s.CPUSeconds
	}
	return c, nil
}

func (c cpuUse) minus(before cpuUse) cpuUse {
	return cpuUse{api: c.api - before.api, replicas: c.replicas - before.replicas, driver: c.driver - before.driver, busy: c.busy - before.busy, wall: c.wall - before.wall}
}

// machineBusy reads from /proc/stat the CPU time, in seconds, all CPUs of
// the machine spent not idle (nor waiting for I/O) since boot.
func machineBusy() (float64, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 6 || f[0] != "cpu" {
		return 0, fmt.Errorf("parse /proc/stat: %q", line)
	}
	var busy int64
	for i, v := range f[1:] {
		if i >= 8 { // guest time is counted in user time already
			break
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parse /proc/stat: %q", line)
		}
		if i != 3 && i != 4 { // idle, iowait
			busy += n
		}
	}
	return float64(busy) / 100, nil // USER_HZ
}

// waitQuiet waits until the machine's other processes (not the API
// server, the replicas or this driver) used fewer than o.quiet cores over
// a second, for at most o.quietWait.
func (b *bench) waitQuiet(ctx context.Context, reps []*replica) error {
	if b.o.quiet <= 0 {
		return nil
	}
	start := time.Now()
	for {
		before, err := b.cpuTimes(reps)
		if err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
		after, err := b.cpuTimes(reps)
		if err != nil {
			return err
		}
		d := after.minus(before)
		others := d.others() / d.wall
		switch {
		case others < b.o.quiet:
			if waited := time.Since(start); waited > 2*time.Second {
				logf("the machine is quiet again after %s", waited.Round(time.Second))
			}
			return nil
		case time.Since(start) > b.o.quietWait:
			logf("other processes still use %.2f cores after %s: measuring anyway", others, b.o.quietWait)
			return nil
		case time.Since(start) < 1500*time.Millisecond:
			logf("other processes use %.2f cores: waiting for them to calm down", others)
		}
	}
}
