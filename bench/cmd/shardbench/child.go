package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
)

// replica is a running replica process; Addr is the URL of its metrics
// endpoint.
type replica struct {
	*proc.Child
	identity string
	started  time.Time
	http     *http.Client
}

// startReplica re-executes this binary as a replica with o, its stderr
// going to a log file in logDir, and waits for its LISTEN line. The replica
// gets SIGKILL if the driver dies.
func startReplica(o replicaOptions, logDir string) (*replica, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, o.args()...)
	cmd.Env = append(os.Environ(), replicaEnv+"=1")
	started := time.Now()
	pc, err := proc.StartChild(cmd, filepath.Join(logDir, o.namespace+"-"+o.identity+".log"), "replica "+o.identity)
	if err != nil {
		return nil, err
	}
	return &replica{Child: pc, identity: o.identity, started: started, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// stop sends SIGTERM and waits for the exit, killing the process after
// 30 s. It returns the exit error of a replica that did not exit cleanly.
func (r *replica) stop() error { return r.Stop(30 * time.Second) }

// ready reports whether /readyz answers 200.
func (r *replica) ready() (bool, error) {
	if err := r.Exited(); err != nil {
		return false, err
	}
	resp, err := r.http.Get(r.Addr + "/readyz")
	if err != nil {
		return false, nil
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK, nil
}

// scrape reads the replica's /metrics.
func (r *replica) scrape() (metricSet, error) {
	resp, err := r.http.Get(r.Addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("scrape replica %s: %w", r.identity, errors.Join(err, r.Exited()))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("scrape replica %s: %s", r.identity, resp.Status)
	}
	ms, err := parseMetrics(body)
	if err != nil {
		return nil, fmt.Errorf("parse metrics of replica %s: %w", r.identity, err)
	}
	return ms, nil
}

// save writes the body of the replica's page path into file.
func (r *replica) save(path, file string) error {
	resp, err := r.http.Get(r.Addr + path)
	if err != nil {
		return fmt.Errorf("replica %s: %w", r.identity, errors.Join(err, r.Exited()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("replica %s: %s: %s", r.identity, path, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// parseMetrics parses metrics in the Prometheus text format.
func parseMetrics(raw []byte) (metricSet, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	return parser.TextToMetricFamilies(bytes.NewReader(raw))
}

// metricSet is one scrape, by metric name.
type metricSet map[string]*dto.MetricFamily

// value returns the value of the gauge or counter name whose labels include
// labels (name=value pairs), summed over the matching series; 0 when
// there is none.
func (m metricSet) value(name string, labels ...string) float64 {
	mf := m[name]
	if mf == nil {
		return 0
	}
	sum := 0.0
	for _, s := range mf.GetMetric() {
		if !hasLabels(s, labels) {
			continue
		}
		switch {
		case s.Gauge != nil:
			sum += s.GetGauge().GetValue()
		case s.Counter != nil:
			sum += s.GetCounter().GetValue()
		case s.Untyped != nil:
			sum += s.GetUntyped().GetValue()
		}
	}
	return sum
}

func hasLabels(s *dto.Metric, labels []string) bool {
	for i := 0; i+1 < len(labels); i += 2 {
		found := false
		for _, l := range s.GetLabel() {
			if l.GetName() == labels[i] && l.GetValue() == labels[i+1] {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// histogram is a cumulative Prometheus histogram.
type histogram struct {
	count  uint64
	sum    float64
	bounds []float64 // upper bounds, ascending, without +Inf
	counts []uint64  // cumulative count per bound
}

// histogram returns the first series of the histogram name.
func (m metricSet) histogram(name string) histogram {
	var h histogram
	mf := m[name]
	if mf == nil || len(mf.GetMetric()) == 0 {
		return h
	}
	ph := mf.GetMetric()[0].GetHistogram()
	h.count, h.sum = ph.GetSampleCount(), ph.GetSampleSum()
	for _, b := range ph.GetBucket() {
		if math.IsInf(b.GetUpperBound(), 1) {
			continue
		}
		h.bounds = append(h.bounds, b.GetUpperBound())
		h.counts = append(h.counts, b.GetCumulativeCount())
	}
	return h
}

// minus returns the observations of h that were not in before (a scrape of
// the same histogram).
func (h histogram) minus(before histogram) histogram {
	d := histogram{count: h.count - before.count, sum: h.sum - before.sum, bounds: h.bounds, counts: make([]uint64, len(h.counts))}
	for i := range h.counts {
		d.counts[i] = h.counts[i]
		if i < len(before.counts) {
			d.counts[i] -= before.counts[i]
		}
	}
	return d
}

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear interpolation within the bucket that holds it. It returns
// +Inf when the quantile lies above the last bound, NaN without
// observations.
func (h histogram) quantile(q float64) float64 {
	if h.count == 0 {
		return math.NaN()
	}
	rank := q * float64(h.count)
	lower, below := 0.0, uint64(0)
	for i, c := range h.counts {
		if float64(c) >= rank {
			in := c - below
			if in == 0 {
				return h.bounds[i]
			}
			return lower + (h.bounds[i]-lower)*(rank-float64(below))/float64(in)
		}
		lower, below = h.bounds[i], c
	}
	return math.Inf(1)
}

// poll calls cond every interval until it returns true or an error, or ctx
// ends, or timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, what string, cond func() (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) {
		return fmt.Errorf("%s: not done after %s: %w", what, timeout, err)
	}
	return err
}
