package requestcount

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

var requestsDesc = prometheus.NewDesc(
	prometheus.BuildFQName("operatorkit", "client", "requests_total"),
	"Requests sent to the Kubernetes API server, by verb and HTTP status code (0: no response).",
	[]string{"verb", "code"}, nil,
)

// Collector returns a prometheus.Collector that exposes c as the counter
// operatorkit_client_requests_total{verb,code}, where verb is one of the
// Verb* constants and code the HTTP status code ("0" for no response). The
// values are read from c at each scrape. Register it yourself; two
// collectors of the same metric cannot share one registry, so register only
// one Counter's collector per registry.
func (c *Counter) Collector() prometheus.Collector { return collector{c} }

type collector struct{ c *Counter }

func (col collector) Describe(ch chan<- *prometheus.Desc) { ch <- requestsDesc }

func (col collector) Collect(ch chan<- prometheus.Metric) {
	col.c.mu.Lock()
	counts := make(map[key]int64, len(col.c.counts))
	for k, n := range col.c.counts {
		counts[k] = n
	}
	col.c.mu.Unlock()
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(requestsDesc, prometheus.CounterValue, float64(n), k.verb.String(), strconv.Itoa(k.code))
	}
}
