package informer

import (
	"errors"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

const (
	metricNamespace = "operatorkit"
	metricSubsystem = "informer"

	labelInformer = "informer"
	labelEvent    = "event"
)

// The values of the "event" label of operatorkit_informer_events_total.
const (
	EventAdd    = "add"
	EventUpdate = "update"
	EventDelete = "delete"
)

// metrics holds one informer's children of the shared metric vectors.
type metrics struct {
	// cacheObjects is the shared collector of cache_objects: Run adds the
	// informer to it while it runs.
	cacheObjects *cacheObjects
	adds         prometheus.Counter
	updates      prometheus.Counter
	deletes      prometheus.Counter
	watchErrors  prometheus.Counter
	// undecodable counts the objects the typed path cached unstructured.
	undecodable prometheus.Counter
}

// newMetrics creates the metric vectors, registers them with r (reusing the
// collectors already registered by another Informer) and returns the
// children labelled with name. With a nil r the vectors stay unregistered,
// so the informer's code paths are the same either way.
func newMetrics(r prometheus.Registerer, name string) (*metrics, error) {
	cacheObjects := &cacheObjects{
		desc: prometheus.NewDesc(prometheus.BuildFQName(metricNamespace, metricSubsystem, "cache_objects"),
			"Objects in the cache of running informers.", []string{labelInformer}, nil),
		names:   map[string]struct{}{},
		running: map[*Informer]struct{}{},
	}
	events := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricNamespace,
		Subsystem: metricSubsystem,
		Name:      "events_total",
		Help:      "Add, update and delete notifications delivered by informers, not counting resyncs.",
	}, []string{labelInformer, labelEvent})
	watchErrors := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricNamespace,
		Subsystem: metricSubsystem,
		Name:      "watch_errors_total",
		Help:      "Errors that ended an informer's list or watch (the informer retries by itself).",
	}, []string{labelInformer})
	undecodable := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: metricNamespace,
		Subsystem: metricSubsystem,
		Name:      "undecodable_objects_total",
		Help:      "Objects (list items or watch events) that the Go type of a typed informer could not hold, cached unstructured instead.",
	}, []string{labelInformer})

	if !nilptr.Is(r) { // nor a nil *prometheus.Registry
		var err error
		if cacheObjects, err = register(r, cacheObjects); err != nil {
			return nil, err
		}
		if events, err = register(r, events); err != nil {
			return nil, err
		}
		if watchErrors, err = register(r, watchErrors); err != nil {
			return nil, err
		}
		if undecodable, err = register(r, undecodable); err != nil {
			return nil, err
		}
	}

	cacheObjects.addName(name)
	m := &metrics{
		cacheObjects: cacheObjects,
		adds:         events.WithLabelValues(name, EventAdd),
		updates:      events.WithLabelValues(name, EventUpdate),
		deletes:      events.WithLabelValues(name, EventDelete),
		watchErrors:  watchErrors.WithLabelValues(name),
		undecodable:  undecodable.WithLabelValues(name),
	}
	m.adds.Add(0)
	m.updates.Add(0)
	m.deletes.Add(0)
	m.watchErrors.Add(0)
	m.undecodable.Add(0)
	return m, nil
}

// cacheObjects is the collector of operatorkit_informer_cache_objects: at
// each scrape it reads the size of the store of every running informer and
// reports their sum by name, 0 for a name none of whose informers runs. It
// keeps no count of its own: a delete that client-go delivers twice (its
// FIFO does not drop a second DELETED of an object already gone) would
// lower a count kept by the event handler twice, and the gauge drift below
// the cache. Reading a store's size takes its read lock and a slice of its
// keys, for the scrape only. It keeps a stopped informer (and its cache)
// no longer than Run runs.
type cacheObjects struct {
	desc *prometheus.Desc

	mu sync.Mutex
	// names are the names of the informers made with the collector: each
	// has a series from New on.
	names map[string]struct{}
	// running are the informers whose Run runs.
	running map[*Informer]struct{}
}

func (c *cacheObjects) addName(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.names[name] = struct{}{}
}

// start counts i's store in the gauge, until stop.
func (c *cacheObjects) start(i *Informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running[i] = struct{}{}
}

// stop takes i's objects out of the gauge.
func (c *cacheObjects) stop(i *Informer) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.running, i)
}

// Describe implements prometheus.Collector.
func (c *cacheObjects) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *cacheObjects) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	counts := make(map[string]int, len(c.names))
	for name := range c.names {
		counts[name] = 0
	}
	running := make([]*Informer, 0, len(c.running))
	for i := range c.running {
		running = append(running, i)
	}
	c.mu.Unlock()
	// The stores outside c.mu: an informer starting or stopping does not
	// wait for a scrape.
	for _, i := range running {
		counts[i.name] += len(i.informer.GetStore().ListKeys())
	}
	for name, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), name)
	}
}

// register registers c with r, or returns the equal collector registered
// before.
func register[C prometheus.Collector](r prometheus.Registerer, c C) (C, error) {
	err := r.Register(c)
	if err == nil {
		return c, nil
	}
	var are prometheus.AlreadyRegisteredError
	if errors.As(err, &are) {
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	var zero C
	return zero, fmt.Errorf("register informer metrics: %w", err)
}
