package main

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// report formats the results.
type report struct {
	machine  string
	command  string
	opts     options
	idleRSS  int64
	results  []phaseResult
	elapsed  time.Duration
	failures []string
}

// savedReport is the JSON form of a report (--json), which --report-from
// renders again without running anything.
type savedReport struct {
	Machine    string        `json:"machine"`
	Command    string        `json:"command"`
	Contenders []string      `json:"contenders"`
	Phases     []string      `json:"phases"`
	Repeat     int           `json:"repeat"`
	IdleRSS    int64         `json:"idleRSS"`
	Elapsed    time.Duration `json:"elapsed"`
	Failures   []string      `json:"failures,omitempty"`
	Results    []phaseResult `json:"results"`
}

func (rep report) saved() savedReport {
	return savedReport{
		Machine: rep.machine, Command: rep.command, Contenders: rep.opts.contenders, Phases: rep.opts.phases,
		Repeat: rep.opts.repeat, IdleRSS: rep.idleRSS, Elapsed: rep.elapsed, Failures: rep.failures, Results: rep.results,
	}
}

func (s savedReport) report() report {
	return report{
		machine: s.Machine, command: s.Command, idleRSS: s.IdleRSS, results: s.Results, elapsed: s.Elapsed, failures: s.Failures,
		opts: options{contenders: s.Contenders, phases: s.Phases, repeat: s.Repeat},
	}
}

// metric is one row of the main table.
type metric struct {
	name string
	get  func(r phaseResult) float64
	fmt  string
	// target is the largest ratio operatorkit/limit (for either operatorkit
	// contender) the issues accept; 0 means no target.
	target float64
}

var metrics = []metric{
	{name: "wall s", get: func(r phaseResult) float64 { return r.Wall.Seconds() }, fmt: "%.2f", target: 1.05},
	{name: "writes", get: func(r phaseResult) float64 { return float64(r.Writes) }, fmt: "%.0f", target: 1.00},
	{name: "writes/Item", get: func(r phaseResult) float64 { return float64(r.Writes) / float64(r.N) }, fmt: "%.2f"},
	{name: "reconciles", get: func(r phaseResult) float64 { return float64(r.Reconciles) }, fmt: "%.0f", target: 1.1},
	{name: "4xx", get: func(r phaseResult) float64 { return float64(r.ClientErrors) }, fmt: "%.0f", target: 1.00},
	{name: "CPU s", get: func(r phaseResult) float64 { return r.PreciseCPUSeconds }, fmt: "%.3f", target: 1.2},
	{name: "CPU s (/proc)", get: func(r phaseResult) float64 { return r.CPUSeconds }, fmt: "%.2f"},
	{name: "CPU µs/reconcile", get: func(r phaseResult) float64 { return per(r.PreciseCPUSeconds*1e6, r.Reconciles) }, fmt: "%.1f"},
	{name: "peak RSS MiB", get: func(r phaseResult) float64 { return float64(r.PeakRSS) / (1 << 20) }, fmt: "%.1f"},
	{name: "RSS above idle MiB", get: func(r phaseResult) float64 { return float64(r.RSSAboveIdle) / (1 << 20) }, fmt: "%.1f", target: 1.1},
	{name: "server writes", get: func(r phaseResult) float64 { return float64(r.ServerWrites) }, fmt: "%.0f"},
	{name: "server Event writes", get: func(r phaseResult) float64 { return float64(r.ServerEventWrites) }, fmt: "%.0f"},
	{name: "server CPU s (/proc)", get: func(r phaseResult) float64 { return r.ServerCPUSeconds }, fmt: "%.2f"},
	{name: "server CPU ms/write", get: func(r phaseResult) float64 { return per(r.ServerCPUSeconds*1e3, r.ServerWrites) }, fmt: "%.2f"},
}

// per returns x per n, NaN when n is 0 (shown as "-").
func per(x float64, n int64) float64 {
	if n == 0 {
		return math.NaN()
	}
	return x / float64(n)
}

type groupKey struct {
	N, Workers int
	Phase      string
	Contender  string
}

func (rep report) groups() map[groupKey][]phaseResult {
	g := map[groupKey][]phaseResult{}
	for _, r := range rep.results {
		k := groupKey{N: r.N, Workers: r.Workers, Phase: r.Phase, Contender: r.Contender}
		g[k] = append(g[k], r)
	}
	return g
}

// stat is the median, min and max of one metric over the repetitions.
type stat struct {
	med, min, max float64
	n             int
}

func summarize(rs []phaseResult, get func(phaseResult) float64) stat {
	var v []float64
	for _, r := range rs {
		if x := get(r); !math.IsNaN(x) {
			v = append(v, x)
		}
	}
	if len(v) == 0 {
		return stat{med: math.NaN()}
	}
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return stat{med: med, min: v[0], max: v[len(v)-1], n: len(v)}
}

func (s stat) format(f string) string {
	if s.n == 0 {
		return "-"
	}
	if s.n == 1 || s.min == s.max {
		return fmt.Sprintf(f, s.med)
	}
	return fmt.Sprintf(f+" ("+f+".."+f+")", s.med, s.min, s.max)
}

func ratio(a, b stat) string {
	switch {
	case a.n == 0 || b.n == 0:
		return "-"
	case b.med == 0 && a.med == 0:
		return "="
	case b.med == 0:
		return "∞"
	}
	return fmt.Sprintf("%.2f", a.med/b.med)
}

// table is a generic table rendered as text or markdown.
type table struct {
	title  string
	header []string
	rows   [][]string
}

func (t table) text() string {
	w := make([]int, len(t.header))
	for i, h := range t.header {
		w[i] = len([]rune(h))
	}
	for _, r := range t.rows {
		for i, c := range r {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	var b strings.Builder
	b.WriteString(t.title + "\n")
	line := func(cells []string) {
		for i, c := range cells {
			b.WriteString(c + strings.Repeat(" ", w[i]-len([]rune(c))+2))
		}
		b.WriteString("\n")
	}
	line(t.header)
	for _, r := range t.rows {
		line(r)
	}
	return b.String()
}

func (t table) markdown() string {
	var b strings.Builder
	b.WriteString("**" + t.title + "**\n\n")
	b.WriteString("| " + strings.Join(t.header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat(" --- |", len(t.header)) + "\n")
	for _, r := range t.rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

func (rep report) sizes() []runSize {
	var out []runSize
	for _, r := range rep.results {
		s := runSize{N: r.N, Workers: r.Workers}
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (rep report) has(c string) bool { return slices.Contains(rep.opts.contenders, c) }

// ratioColumn is a column of the main table: the ratio of contender a's
// median to contender b's.
type ratioColumn struct {
	label string
	a, b  string
}

// ratioColumns are the ratio columns, in order; each is shown when both of
// its contenders ran.
var ratioColumns = []ratioColumn{
	{"okit/crt", kindOperatorkit, kindControllerRuntime},
	{"okit/limit", kindOperatorkit, kindLimit},
	{"readme/limit", kindOperatorkitReadme, kindLimit},
	{"readme/okit", kindOperatorkitReadme, kindOperatorkit},
	{"okit/limit-ready", kindOperatorkit, kindLimitReady},
	{"readme/limit-ready", kindOperatorkitReadme, kindLimitReady},
}

// ratios returns the ratio columns whose contenders both ran.
func (rep report) ratios() []ratioColumn {
	var out []ratioColumn
	for _, rc := range ratioColumns {
		if rep.has(rc.a) && rep.has(rc.b) {
			out = append(out, rc)
		}
	}
	return out
}

// okitKinds are the contenders whose ratios to the limit have targets.
var okitKinds = []string{kindOperatorkit, kindOperatorkitReadme}

// tables builds the main tables (one per N and worker count), the request
// table and the targets table.
func (rep report) tables() []table {
	g := rep.groups()
	var out []table
	for _, size := range rep.sizes() {
		t := table{
			title:  fmt.Sprintf("N=%d Items, %d workers: median (min..max) of %d repetition(s)", size.N, size.Workers, rep.opts.repeat),
			header: []string{"phase", "metric"},
		}
		t.header = append(t.header, rep.opts.contenders...)
		for _, rc := range rep.ratios() {
			t.header = append(t.header, rc.label)
		}
		for _, phase := range rep.opts.phases {
			for _, m := range metrics {
				row := []string{phase, m.name}
				st := map[string]stat{}
				for _, c := range rep.opts.contenders {
					st[c] = summarize(g[groupKey{size.N, size.Workers, phase, c}], m.get)
					row = append(row, st[c].format(m.fmt))
				}
				for _, rc := range rep.ratios() {
					row = append(row, ratio(st[rc.a], st[rc.b]))
				}
				t.rows = append(t.rows, row)
			}
		}
		out = append(out, t)
	}

	req := table{title: "Requests by verb and status code (median), and the API server's own count of writes and 4xx on items+configmaps minus the driver's", header: []string{"N", "workers", "phase", "contender", "requests by verb", "status codes", "server writes / 4xx"}}
	for _, size := range rep.sizes() {
		for _, phase := range rep.opts.phases {
			for _, c := range rep.opts.contenders {
				rs := g[groupKey{size.N, size.Workers, phase, c}]
				if len(rs) == 0 {
					continue
				}
				verbs := medianMap(rs, func(r phaseResult) map[string]int64 { return r.ByVerb })
				codes := medianMap(rs, func(r phaseResult) map[string]int64 {
					m := map[string]int64{}
					for k, v := range r.ByCode {
						m[fmt.Sprint(k)] = v
					}
					return m
				})
				sw := summarize(rs, func(r phaseResult) float64 { return float64(r.ServerWrites) })
				se := summarize(rs, func(r phaseResult) float64 { return float64(r.ServerClientErrors) })
				req.rows = append(req.rows, []string{fmt.Sprint(size.N), fmt.Sprint(size.Workers), phase, c, verbs, codes,
					fmt.Sprintf("%.0f / %.0f", sw.med, se.med)})
			}
		}
	}
	out = append(out, req)

	var targeted []string
	for _, k := range okitKinds {
		if rep.has(k) && rep.has(kindLimit) {
			targeted = append(targeted, k)
		}
	}
	if len(targeted) > 0 {
		tt := table{title: "Targets (each operatorkit contender/limit, medians): wall ≤ 1.05, writes 1.00 and no 4xx, reconciles ≤ 1.1, CPU ≤ 1.2, RSS above idle ≤ 1.1; steady: 0 writes and ≤ 10 µs CPU per no-op reconcile",
			header: []string{"N", "workers", "phase", "contender", "wall", "writes", "4xx", "reconciles", "CPU", "RSS above idle", "steady"}}
		for _, size := range rep.sizes() {
			for _, phase := range rep.opts.phases {
				for _, kind := range targeted {
					row := []string{fmt.Sprint(size.N), fmt.Sprint(size.Workers), phase, kind}
					ok := g[groupKey{size.N, size.Workers, phase, kind}]
					lim := g[groupKey{size.N, size.Workers, phase, kindLimit}]
					if len(ok) == 0 || len(lim) == 0 {
						continue
					}
					for _, name := range []string{"wall s", "writes", "4xx", "reconciles", "CPU s", "RSS above idle MiB"} {
						m := metricByName(name)
						a, b := summarize(ok, m.get), summarize(lim, m.get)
						r := ratio(a, b)
						pass := a.med <= b.med*m.target+1e-9
						switch name {
						case "4xx":
							pass = a.med == 0
							r = fmt.Sprintf("%.0f vs %.0f", a.med, b.med)
						case "writes":
							if d := a.med - b.med; d != 0 {
								r += fmt.Sprintf(" (%+.0f)", d)
							}
						}
						row = append(row, mark(r, pass))
					}
					if phase == PhaseSteady {
						w := summarize(ok, func(r phaseResult) float64 { return float64(r.Writes) })
						cpu := summarize(ok, metricByName("CPU µs/reconcile").get)
						row = append(row, mark(fmt.Sprintf("%.0f writes, %.1f µs/reconcile", w.med, cpu.med), w.med == 0 && cpu.med <= 10))
					} else {
						row = append(row, "")
					}
					tt.rows = append(tt.rows, row)
				}
			}
		}
		out = append(out, tt)
	}
	return out
}

func mark(s string, pass bool) string {
	if pass {
		return s + " ✓"
	}
	return s + " ✗"
}

func metricByName(name string) metric {
	for _, m := range metrics {
		if m.name == name {
			return m
		}
	}
	panic("no metric " + name)
}

// medianMap formats the per-key medians of maps, sorted by key.
func medianMap(rs []phaseResult, get func(phaseResult) map[string]int64) string {
	keys := map[string]bool{}
	for _, r := range rs {
		for k := range get(r) {
			keys[k] = true
		}
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	var parts []string
	for _, k := range sorted {
		s := summarize(rs, func(r phaseResult) float64 { return float64(get(r)[k]) })
		parts = append(parts, fmt.Sprintf("%s=%.0f", k, s.med))
	}
	return strings.Join(parts, " ")
}

func (rep report) header() []string {
	return []string{
		"Machine: " + rep.machine,
		"Command: " + rep.command,
		fmt.Sprintf("Idle contender (same binary, --idle): peak RSS %s. Total run time %s.", mib(rep.idleRSS), rep.elapsed.Round(time.Second)),
	}
}

func (rep report) text() string {
	var b strings.Builder
	for _, l := range rep.header() {
		b.WriteString(l + "\n")
	}
	for _, t := range rep.tables() {
		b.WriteString("\n" + t.text())
	}
	for _, f := range rep.failures {
		b.WriteString("\nFAILED: " + f + "\n")
	}
	return b.String()
}

func (rep report) markdown() string {
	var b strings.Builder
	for _, l := range rep.header() {
		if c, ok := strings.CutPrefix(l, "Command: "); ok {
			l = "Command: `" + c + "`"
		}
		b.WriteString("- " + l + "\n")
	}
	for _, t := range rep.tables() {
		b.WriteString("\n" + t.markdown())
	}
	for _, f := range rep.failures {
		b.WriteString("\n**FAILED:** " + f + "\n")
	}
	return b.String()
}
