package metrics

import "github.com/prometheus/client_golang/prometheus"

// The names of the metrics, as namespace, subsystem and name parts.
const (
	namespace = "operatorkit"
	subsystem = "resource"
)

// The labels of every metric.
const (
	labelResource  = "resource"
	labelOperation = "operation"
)

func newDurationVec() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace,
		Subsystem: subsystem,
		Name:      "operation_duration_seconds",
		Help:      "Duration of resource operations and CRUD steps.",
		Buckets:   prometheus.DefBuckets,
	}, []string{labelResource, labelOperation})
}

func newErrorsVec() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace,
		Subsystem: subsystem,
		Name:      "operation_errors_total",
		Help:      "Number of resource operations and CRUD steps that returned an error or panicked.",
	}, []string{labelResource, labelOperation})
}
