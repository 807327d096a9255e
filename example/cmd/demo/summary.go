package main

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"golang.org/x/term"
)

// Metric names read for the summary.
const (
	metricReconciliations = "operatorkit_framework_reconciliations_total"
	metricReconcileTime   = "operatorkit_framework_reconcile_duration_seconds"
)

// summary prints the summary table and the result line.
func (d *demo) summary(wall time.Duration) error {
	families, err := d.reg.Gather()
	if err != nil {
		return fmt.Errorf("gather metrics: %w", err)
	}
	var byResult map[string]float64
	var hist *dto.Histogram
	for _, mf := range families {
		switch mf.GetName() {
		case metricReconciliations:
			byResult = map[string]float64{}
			for _, m := range mf.GetMetric() {
				byResult[label(m, "result")] += m.GetCounter().GetValue()
			}
		case metricReconcileTime:
			if ms := mf.GetMetric(); len(ms) > 0 {
				hist = ms[0].GetHistogram()
			}
		}
	}
	remaining := len(d.names) - len(d.deleted)
	snap := d.counter.Snapshot()

	d.printf("\nsummary\n")
	row := func(k, format string, args ...any) { d.printf("  %-19s %s\n", k, fmt.Sprintf(format, args...)) }
	row("objects", "%d created, %d moved to release 2, %d deleted", len(d.names), len(d.release2), len(d.deleted))
	row("converged", "%d/%d remaining WebApps Ready, with their children as specified", d.converged, remaining)
	row("deletes processed", "%d/%d (children left behind: %d)", d.gone, len(d.deleted), d.leftovers)
	row("reconciles", "%s", formatCounts(byResult))
	row("api requests", "%d by the operator: %s", snap.Total, formatVerbs(snap.ByVerb))
	var phases []string
	for _, p := range d.phases {
		phases = append(phases, fmt.Sprintf("%s %s", shortPhase(p.name), p.d.Round(10*time.Millisecond)))
	}
	row("wall time", "%s (%s)", wall.Round(10*time.Millisecond), strings.Join(phases, ", "))
	if hist != nil && hist.GetSampleCount() > 0 {
		row("reconcile latency", "p50 %s, p99 %s over %d reconciles (from the framework's histogram)",
			fmtSeconds(quantile(hist, 0.5)), fmtSeconds(quantile(hist, 0.99)), hist.GetSampleCount())
	}
	if d.converged != remaining || d.gone != len(d.deleted) {
		return fmt.Errorf("%d/%d WebApps converged, %d/%d deletes processed", d.converged, remaining, d.gone, len(d.deleted))
	}
	d.printf("\nresult: OK: every WebApp converged and every delete was processed\n")
	return nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// formatCounts formats reconciliations by result, largest first, zeros
// left out.
func formatCounts(m map[string]float64) string {
	if m == nil {
		return "(no framework metrics)"
	}
	type kv struct {
		k string
		v float64
	}
	var kvs []kv
	var total float64
	for k, v := range m {
		total += v
		if v > 0 {
			kvs = append(kvs, kv{k, v})
		}
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].v > kvs[j].v || kvs[i].v == kvs[j].v && kvs[i].k < kvs[j].k })
	parts := make([]string, len(kvs))
	for i, e := range kvs {
		parts[i] = fmt.Sprintf("%s %.0f", e.k, e.v)
	}
	return fmt.Sprintf("%.0f (%s)", total, strings.Join(parts, ", "))
}

func formatVerbs(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func shortPhase(title string) string {
	switch {
	case strings.HasPrefix(title, "starting etcd"):
		return "api server"
	case strings.HasPrefix(title, "installing"):
		return "crd"
	case strings.HasPrefix(title, "starting the operator"):
		return "operator"
	case strings.HasPrefix(title, "creating"):
		return "create"
	case strings.HasPrefix(title, "moving"):
		return "release 2"
	case strings.HasPrefix(title, "deleting"):
		return "delete"
	}
	return title
}

// quantile estimates the q-quantile of a cumulative histogram by linear
// interpolation within the bucket that holds it, as PromQL's
// histogram_quantile does.
func quantile(h *dto.Histogram, q float64) float64 {
	count := float64(h.GetSampleCount())
	if count == 0 {
		return math.NaN()
	}
	rank := q * count
	lower, prev := 0.0, 0.0
	for _, b := range h.GetBucket() {
		upper, cum := b.GetUpperBound(), float64(b.GetCumulativeCount())
		if cum >= rank {
			if cum == prev {
				return upper
			}
			return lower + (upper-lower)*(rank-prev)/(cum-prev)
		}
		lower, prev = upper, cum
	}
	return lower // in the +Inf bucket: the largest finite bound
}

func fmtSeconds(s float64) string {
	if math.IsNaN(s) {
		return "n/a"
	}
	return time.Duration(s * float64(time.Second)).Round(10 * time.Microsecond).String()
}

// isTerminal reports whether w is a terminal, where progress is a live line.
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// delegatingHandler serves with a handler set later (the operator's debug
// pages exist only once the operator is built), 503 before.
type delegatingHandler struct {
	mu sync.RWMutex
	h  http.Handler
}

func (d *delegatingHandler) set(h http.Handler) {
	d.mu.Lock()
	d.h = h
	d.mu.Unlock()
}

func (d *delegatingHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	d.mu.RLock()
	h := d.h
	d.mu.RUnlock()
	if h == nil {
		http.Error(w, "the operator has not started yet", http.StatusServiceUnavailable)
		return
	}
	h.ServeHTTP(w, r)
}
