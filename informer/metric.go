package informer

import (
	"errors"
	"fmt"

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
	cacheObjects prometheus.Gauge
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
	cacheObjects := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: metricNamespace,
		Subsystem: metricSubsystem,
		Name:      "cache_objects",
		Help:      "Objects in the cache of running informers.",
	}, []string{labelInformer})
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

	m := &metrics{
		cacheObjects: cacheObjects.WithLabelValues(name),
		adds:         events.WithLabelValues(name, EventAdd),
		updates:      events.WithLabelValues(name, EventUpdate),
		deletes:      events.WithLabelValues(name, EventDelete),
		watchErrors:  watchErrors.WithLabelValues(name),
		undecodable:  undecodable.WithLabelValues(name),
	}
	m.cacheObjects.Add(0)
	m.adds.Add(0)
	m.updates.Add(0)
	m.deletes.Add(0)
	m.watchErrors.Add(0)
	m.undecodable.Add(0)
	return m, nil
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
