package framework

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/operatorkit/operatorkit/internal/promutil"
)

// Metric names, all labelled with "controller" (Config.Name) and nothing
// that grows with the number of objects. docs/observability.md describes each.
const (
	metricReconciliations     = "operatorkit_framework_reconciliations_total"
	metricReconcileDuration   = "operatorkit_framework_reconcile_duration_seconds"
	metricErrors              = "operatorkit_framework_errors_total"
	metricPanics              = "operatorkit_framework_panics_total"
	metricLastSuccess         = "operatorkit_framework_last_successful_reconcile_timestamp_seconds"
	metricObjectsInDeletion   = "operatorkit_framework_objects_in_deletion"
	metricOldestDeletion      = "operatorkit_framework_oldest_deletion_age_seconds"
	metricOldestPending       = "operatorkit_framework_oldest_pending_reconcile_age_seconds"
	metricObjectsPerSet       = "operatorkit_framework_objects"
	metricEventsFiltered      = "operatorkit_framework_update_events_filtered_total"
	metricWatchErrors         = "operatorkit_framework_watch_errors_total"
	workqueueMetricsNamespace = "operatorkit"
	workqueueMetricsSubsystem = "workqueue"
)

var allResults = []string{
	ResultSuccess, ResultRequeue, ResultFinalizerKept, ResultError, ResultPermanent,
	ResultPanic, ResultNoResourceSet, ResultSkipped, ResultDryRun, ResultConflict, ResultStale,
	ResultSuperseded,
}

// metrics are the Framework's own collectors, curried with its controller
// label.
type metrics struct {
	reconciliations *prometheus.CounterVec // result
	// byResult holds the counter of each result of allResults, in that
	// order, looked up once: observe then neither hashes the labels nor
	// searches the vector's map.
	byResult       []prometheus.Counter
	duration       prometheus.Observer
	errors         *prometheus.CounterVec // resource, step
	panics         prometheus.Counter
	lastSuccess    prometheus.Gauge
	eventsFiltered prometheus.Counter
	watchErrors    prometheus.Counter
	// states reports the stuck-object gauges of the Framework while it
	// runs.
	states *stateCollector
}

func newMetrics(controller string, reg prometheus.Registerer) (*metrics, workqueue.MetricsProvider, error) {
	cl := prometheus.Labels{"controller": controller}
	reconciliations, err := promutil.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricReconciliations, Help: "Reconciliations by result.",
	}, []string{"controller", "result"}))
	if err != nil {
		return nil, nil, err
	}
	duration, err := promutil.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    metricReconcileDuration,
		Help:    "Duration of one reconciliation of one object, whatever its result.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 18), // 100µs .. ~13s
	}, []string{"controller"}))
	if err != nil {
		return nil, nil, err
	}
	errs, err := promutil.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricErrors, Help: "Failed reconciliations by the resource and step that failed.",
	}, []string{"controller", "resource", "step"}))
	if err != nil {
		return nil, nil, err
	}
	panics, err := promutil.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricPanics, Help: "Reconciliations that panicked (recovered and retried with backoff).",
	}, []string{"controller"}))
	if err != nil {
		return nil, nil, err
	}
	lastSuccess, err := promutil.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: metricLastSuccess, Help: "Unix time of the last successful reconciliation.",
	}, []string{"controller"}))
	if err != nil {
		return nil, nil, err
	}
	filtered, err := promutil.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricEventsFiltered, Help: "Update events dropped by the update predicate (own finalizer and status writes).",
	}, []string{"controller"}))
	if err != nil {
		return nil, nil, err
	}
	watchErrors, err := promutil.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: metricWatchErrors, Help: "Errors received on the error channel of ProcessEvents.",
	}, []string{"controller"}))
	if err != nil {
		return nil, nil, err
	}
	m := &metrics{
		reconciliations: reconciliations.MustCurryWith(cl),
		duration:        duration.With(cl),
		errors:          errs.MustCurryWith(cl),
		panics:          panics.With(cl),
		lastSuccess:     lastSuccess.With(cl),
		eventsFiltered:  filtered.With(cl),
		watchErrors:     watchErrors.With(cl),
	}
	m.byResult = make([]prometheus.Counter, len(allResults))
	for i, r := range allResults {
		m.byResult[i] = m.reconciliations.WithLabelValues(r)
		m.byResult[i].Add(0)
	}
	// Shared with the Frameworks of the same name on reg, as the counters
	// are: the one registered first would report only its own Framework.
	if m.states, err = promutil.Register(reg, newStateCollector(controller)); err != nil {
		return nil, nil, err
	}
	provider, err := newWorkqueueMetricsProvider(reg)
	if err != nil {
		return nil, nil, err
	}
	return m, provider, nil
}

func (m *metrics) observe(result string, d time.Duration) {
	m.reconciliationsOf(result).Inc()
	m.duration.Observe(d.Seconds())
}

// reconciliationsOf returns the reconciliations counter of result: one of
// byResult (ResultSuccess, the most common, is the first), or the vector's
// for a result allResults does not name.
func (m *metrics) reconciliationsOf(result string) prometheus.Counter {
	for i, r := range allResults {
		if r == result {
			return m.byResult[i]
		}
	}
	return m.reconciliations.WithLabelValues(result)
}

func (m *metrics) countError(resource, step string) {
	m.errors.WithLabelValues(resource, step).Inc()
}

// forget is called when an object is gone. Metrics carry no per-object
// labels, so there is nothing to delete; it exists so that callers need not
// know that.
func (m *metrics) forget(string) {}

// stateCollector computes the stuck-object gauges at scrape time from the
// object states of the Frameworks of one name while they run (Boot, from
// their workers' start on), added up: a Framework that does not run, a
// standby replica whose Owns handlers enqueue owners before it leads or one
// whose Boot returned, reconciles nothing, and reports 0 and no objects per
// resource set. Its descriptors carry the controller as a constant label, so
// Frameworks of other names register collectors of their own beside it.
type stateCollector struct {
	inDeletion, oldestDeletion, oldestPending, perSet *prometheus.Desc

	mu     sync.Mutex
	states []*objectState // of the running Frameworks
}

func newStateCollector(controller string) *stateCollector {
	cl := prometheus.Labels{"controller": controller}
	return &stateCollector{
		inDeletion:     prometheus.NewDesc(metricObjectsInDeletion, "Objects being deleted that still carry the Framework's finalizer.", nil, cl),
		oldestDeletion: prometheus.NewDesc(metricOldestDeletion, "Age of the oldest deletion still waiting for the Framework's finalizer to go (0 when none).", nil, cl),
		oldestPending:  prometheus.NewDesc(metricOldestPending, "Age of the oldest object waiting for a successful reconciliation since it last needed one (0 when none, and while the Framework does not run).", nil, cl),
		perSet:         prometheus.NewDesc(metricObjectsPerSet, "Objects last routed to each resource set (release).", []string{"resource_set"}, cl),
	}
}

// running makes c report s, the state of a Framework whose workers run,
// until the returned func is called.
func (c *stateCollector) running(s *objectState) (stopped func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states = append(c.states, s)
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.states = slices.DeleteFunc(c.states, func(x *objectState) bool { return x == s })
	}
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.inDeletion
	ch <- c.oldestDeletion
	ch <- c.oldestPending
	ch <- c.perSet
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	states := slices.Clone(c.states)
	c.mu.Unlock()
	inDeletion, oldestDel, oldestPending, perSet := 0, time.Duration(0), time.Duration(0), map[string]int{}
	for _, s := range states {
		n, del, pending, sets := s.stats()
		inDeletion += n
		oldestDel, oldestPending = max(oldestDel, del), max(oldestPending, pending)
		for set, count := range sets {
			perSet[set] += count
		}
	}
	ch <- prometheus.MustNewConstMetric(c.inDeletion, prometheus.GaugeValue, float64(inDeletion))
	ch <- prometheus.MustNewConstMetric(c.oldestDeletion, prometheus.GaugeValue, oldestDel.Seconds())
	ch <- prometheus.MustNewConstMetric(c.oldestPending, prometheus.GaugeValue, oldestPending.Seconds())
	for set, count := range perSet {
		ch <- prometheus.MustNewConstMetric(c.perSet, prometheus.GaugeValue, float64(count), set)
	}
}

// workqueueMetricsProvider exposes client-go's work queue metrics
// (operatorkit_workqueue_*, label "name" = the queue's name, which is the
// Framework's Name) on the Framework's Registerer.
type workqueueMetricsProvider struct {
	depth          *prometheus.GaugeVec
	adds           *prometheus.CounterVec
	latency        *prometheus.HistogramVec
	workDuration   *prometheus.HistogramVec
	unfinished     *prometheus.GaugeVec
	longestRunning *prometheus.GaugeVec
	retries        *prometheus.CounterVec
}

func newWorkqueueMetricsProvider(reg prometheus.Registerer) (*workqueueMetricsProvider, error) {
	opts := func(name, help string) (string, string, string, string) {
		return workqueueMetricsNamespace, workqueueMetricsSubsystem, name, help
	}
	gauge := func(name, help string) (*prometheus.GaugeVec, error) {
		ns, sub, n, h := opts(name, help)
		return promutil.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: n, Help: h}, []string{"name"}))
	}
	counter := func(name, help string) (*prometheus.CounterVec, error) {
		ns, sub, n, h := opts(name, help)
		return promutil.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: n, Help: h}, []string{"name"}))
	}
	histogram := func(name, help string) (*prometheus.HistogramVec, error) {
		ns, sub, n, h := opts(name, help)
		return promutil.Register(reg, prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Subsystem: sub, Name: n, Help: h,
			Buckets: prometheus.ExponentialBuckets(1e-6, 10, 10),
		}, []string{"name"}))
	}
	var p workqueueMetricsProvider
	var err error
	if p.depth, err = gauge("depth", "Current depth of the work queue."); err != nil {
		return nil, err
	}
	if p.adds, err = counter("adds_total", "Adds handled by the work queue."); err != nil {
		return nil, err
	}
	if p.latency, err = histogram("queue_duration_seconds", "How long an item stays in the work queue before a worker takes it."); err != nil {
		return nil, err
	}
	if p.workDuration, err = histogram("work_duration_seconds", "How long processing an item from the work queue takes."); err != nil {
		return nil, err
	}
	if p.unfinished, err = gauge("unfinished_work_seconds", "Seconds of work in progress not yet observed by work_duration; large values mean stuck workers."); err != nil {
		return nil, err
	}
	if p.longestRunning, err = gauge("longest_running_processor_seconds", "Seconds the longest running worker has been processing its item."); err != nil {
		return nil, err
	}
	if p.retries, err = counter("retries_total", "Delayed requeues handled by the work queue (every AddAfter: backoff retries, asked-for delays, stale deferrals)."); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *workqueueMetricsProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	return p.depth.WithLabelValues(name)
}

func (p *workqueueMetricsProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	return p.adds.WithLabelValues(name)
}

func (p *workqueueMetricsProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return p.latency.WithLabelValues(name)
}

func (p *workqueueMetricsProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return p.workDuration.WithLabelValues(name)
}

func (p *workqueueMetricsProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.unfinished.WithLabelValues(name)
}

func (p *workqueueMetricsProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return p.longestRunning.WithLabelValues(name)
}

func (p *workqueueMetricsProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	return p.retries.WithLabelValues(name)
}
