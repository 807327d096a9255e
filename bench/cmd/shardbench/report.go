package main

import (
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/operator"
)

const mib = 1 << 20

// group is the runs of one configuration (replica count, sharded or not).
type group struct {
	replicas int
	sharded  bool
	runs     []*result // in repetition order
	median   *result   // the run with the median convergence
	// convergence and throughput of the runs: median, min, max
	converge, lo, hi time.Duration
}

func (g *group) label() string {
	if !g.sharded {
		return fmt.Sprintf("%d (no sharding)", g.replicas)
	}
	return fmt.Sprint(g.replicas)
}

func (g *group) throughput() float64 { return float64(g.median.objects) / g.converge.Seconds() }

// groups groups results by configuration, in the order they first ran.
func groups(results []*result) []*group {
	var gs []*group
	for _, r := range results {
		i := slices.IndexFunc(gs, func(g *group) bool { return g.replicas == r.replicas && g.sharded == r.sharded })
		if i < 0 {
			gs = append(gs, &group{replicas: r.replicas, sharded: r.sharded})
			i = len(gs) - 1
		}
		gs[i].runs = append(gs[i].runs, r)
	}
	for _, g := range gs {
		sorted := slices.Clone(g.runs)
		slices.SortFunc(sorted, func(a, b *result) int { return int(a.converge - b.converge) })
		g.median = sorted[(len(sorted)-1)/2]
		g.converge, g.lo, g.hi = g.median.converge, sorted[0].converge, sorted[len(sorted)-1].converge
	}
	return gs
}

// report renders the results as Markdown.
func report(o options, results []*result, took time.Duration) string {
	var w strings.Builder
	fmt.Fprintf(&w, "Machine: %s. Full run: %s.\n\n", proc.Machine(), took.Round(time.Second))
	fmt.Fprintf(&w, "Settings: %d ConfigMaps of %d bytes created at once (%d concurrent creates); each replica a separate process with %d workers, "+
		"%s wait per reconciliation, no finalizers (framework.Config.DisableFinalizers), Sharding.AssignWorkers %s, client-side limit %g QPS / burst %d, "+
		"LeaseDuration %s, RenewDeadline %s, RetryPeriod %s, %d virtual nodes; %d run(s) of each replica count; child Secrets: %s.\n\n",
		o.objects, o.dataBytes, o.createConcurrency, o.workers, o.external, assignWorkers(o), o.qps, o.burst,
		o.leaseDuration, o.renewDeadline, o.retryPeriod, operator.DefaultVirtualNodes, o.repeat, o.children)

	gs := groups(results)
	// one is the single sharded replica, the reference of throughput; ref
	// the single replica without sharding, the reference of memory (the
	// sharded one when there is none).
	var one, ref *group
	for _, g := range gs {
		switch {
		case g.sharded && g.replicas == 1 && one == nil:
			one = g
		case !g.sharded && g.replicas == 1 && ref == nil:
			ref = g
		}
	}
	if ref == nil {
		ref = one
	}
	refName := "the single replica without sharding"
	if ref != nil && ref.sharded {
		refName = "the single sharded replica"
	}
	fmt.Fprintf(&w, "Burst convergence is the median of the runs (min–max); the other columns are of the median run. "+
		"Throughput is compared with the single sharded replica (N=1), memory with %s divided by N; "+
		"\"others\" is the largest replica that does not lead, the leader also runs the assigner. "+
		"Cache heap is the live heap after two forced GCs (the second empties the sync.Pools) once the burst was reconciled, minus the same before the first object was created.\n\n", refName)
	w.WriteString("| replicas | objects | burst convergence (s) | throughput (objects/s) | vs N=1 | target ≥ 0.8×N | objects per replica | RSS per replica (MiB) | RSS vs RSS₁/N: others / leader | cache heap per replica (MiB) | cache heap vs cache₁/N: others / leader |\n")
	w.WriteString("|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, g := range gs {
		r := g.median
		ratio, target, rssRatio, heapRatio := "–", "–", "–", "–"
		if one != nil && g.sharded {
			x := g.throughput() / one.throughput()
			ratio = fmt.Sprintf("%.2f", x)
			if g.replicas > 1 {
				need := 0.8 * float64(g.replicas)
				target = fmt.Sprintf("%.1f: %s", need, metOrMissed(x >= need))
			}
		}
		if ref != nil && g != ref {
			rssRatio = memRatio(r, ref.median, rssOf)
			heapRatio = memRatio(r, ref.median, cacheOf)
		}
		conv := fmt.Sprintf("%.2f", g.converge.Seconds())
		if len(g.runs) > 1 {
			conv += fmt.Sprintf(" (%.2f–%.2f)", g.lo.Seconds(), g.hi.Seconds())
		}
		fmt.Fprintf(&w, "| %s | %d | %s | %.0f | %s | %s | %s | %s | %s | %s | %s |\n",
			g.label(), r.objects, conv, g.throughput(), ratio, target,
			spread(r.members, func(m member) float64 { return m.owned }, "%.0f"),
			spread(r.members, func(m member) float64 { return rssOf(m) / mib }, "%.1f"),
			rssRatio,
			spread(r.members, func(m member) float64 { return cacheOf(m) / mib }, "%.1f"),
			heapRatio)
	}

	fmt.Fprintf(&w, "\nEvery run's burst, from the first create until every object was reconciled; CPU time of the API server with its etcd, "+
		"of the replicas together, of this driver, and of the machine's other processes, on %d CPUs:\n\n", runtime.NumCPU())
	w.WriteString("| replicas | run | creates done (s) | all assigned (s) | burst convergence (s) | ConfigMap PATCHes | CPU s: API server / replicas / driver | CPU used (cores) | other processes (cores) |\n|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range results {
		label := fmt.Sprint(r.replicas)
		assigned := "–"
		if r.sharded {
			assigned = fmt.Sprintf("%.2f", r.assigned.Seconds())
		} else {
			label += " (no sharding)"
		}
		ours := r.cpu.api + r.cpu.replicas + r.cpu.driver
		fmt.Fprintf(&w, "| %s | %d | %.2f | %s | %.2f | %.0f | %.1f / %.1f / %.1f | %.2f | %.2f |\n",
			label, r.rep, r.create.Seconds(), assigned, r.converge.Seconds(), r.writes, r.cpu.api, r.cpu.replicas, r.cpu.driver,
			ours/r.cpu.wall, r.cpu.others()/r.cpu.wall)
	}

	var moves []*move
	var reps []int
	for _, r := range results {
		if r.scaleOut != nil {
			moves, reps = append(moves, r.scaleOut), append(reps, r.rep)
		}
		if r.scaleIn != nil {
			moves, reps = append(moves, r.scaleIn), append(reps, r.rep)
		}
	}
	if len(moves) > 0 {
		w.WriteString("\nScaling out by one replica after the burst, and back; times from the start of the new replica's process (scale-out) or from its SIGTERM (scale-in):\n\n")
		w.WriteString("| change | run | joined (s) | labels settled (s) | new replica reconciled its share (s) | objects of the new/stopped replica | moved (leader's moves_total) | ConfigMap PATCHes | hand-over p50 / p90 / p99 (s) | hand-over mean (s) | objects off their ring owner | reconciliations of the old owners meanwhile | other processes (cores) |\n")
		w.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
		for i, m := range moves {
			kind := "scale-out"
			join, rec, extra, others := fmt.Sprintf("%.2f", m.join.Seconds()), fmt.Sprintf("%.2f", m.reconciled.Seconds()), fmt.Sprintf("%.0f", m.extra), "–"
			if m.cpu.wall > 0 {
				others = fmt.Sprintf("%.2f", m.cpu.others()/m.cpu.wall)
			}
			if m.to < m.from {
				kind, join, rec, extra = "scale-in (clean stop)", "–", "–", "–"
			}
			hand, mean := "– (no drain)", "–"
			if m.handover.count > 0 {
				hand = fmt.Sprintf("%s / %s / %s", seconds(m.handover.quantile(0.5)), seconds(m.handover.quantile(0.9)), seconds(m.handover.quantile(0.99)))
				mean = fmt.Sprintf("%.3f (%d hand-overs)", m.handover.sum/float64(m.handover.count), m.handover.count)
			}
			fmt.Fprintf(&w, "| %d → %d %s | %d | %s | %.2f | %s | %d | %.0f | %.0f | %s | %s | %d | %s | %s |\n",
				m.from, m.to, kind, reps[i], join, m.settle.Seconds(), rec, m.share, m.moved, m.writes, hand, mean, m.misplaced, extra, others)
		}
	}

	w.WriteString("\nPer replica of the median runs, before the burst (idle) and after it:\n\n| replicas | replica | leader | RSS idle → after (MiB) | live heap idle → after (MiB) | owned objects | objects reconciled | reconciliations |\n|---|---|---|---|---|---|---|---|\n")
	for _, g := range gs {
		for _, m := range g.median.members {
			leader := ""
			if m.leader {
				leader = "yes"
			}
			fmt.Fprintf(&w, "| %s | %s | %s | %.1f → %.1f | %.1f → %.1f | %.0f | %.0f | %.0f |\n",
				g.label(), m.identity, leader, float64(m.idleRSS)/mib, float64(m.rss)/mib, m.idleHeap/mib, m.heapLive/mib, m.owned, m.reconciled, m.total)
		}
	}
	var notes []string
	for _, r := range results {
		if r.duplicates > 0 {
			notes = append(notes, fmt.Sprintf("N=%d run %d: %d objects were reconciled by more than one replica during the burst.", r.replicas, r.rep, r.duplicates))
		}
		if r.deleteChain > 0 {
			notes = append(notes, fmt.Sprintf("N=%d run %d: %.0f delete chains ran, though no object was deleted.", r.replicas, r.rep, r.deleteChain))
		}
	}
	if len(notes) > 0 {
		w.WriteString("\nNotes:\n\n")
		for _, n := range notes {
			w.WriteString("- " + n + "\n")
		}
	}
	return w.String()
}

func assignWorkers(o options) string {
	if o.assignWorkers == 0 {
		return fmt.Sprintf("%d (default)", operator.DefaultShardAssignWorkers)
	}
	return fmt.Sprint(o.assignWorkers)
}

func rssOf(m member) float64 { return float64(m.rss) }

// cacheOf is the growth of m's live heap from idle to after the burst.
func cacheOf(m member) float64 { return m.heapLive - m.idleHeap }

// memRatio compares r's memory to the 1/N share of ref's single replica:
// the largest non-leader's, and the leader's.
func memRatio(r, ref *result, mem func(member) float64) string {
	share := mem(ref.members[0]) / float64(r.replicas)
	others, leader := "–", "–"
	hi := math.Inf(-1)
	for _, m := range r.members {
		switch {
		case m.leader:
			leader = fmt.Sprintf("%.2f", mem(m)/share)
		default:
			hi = math.Max(hi, mem(m)/share)
			others = fmt.Sprintf("%.2f", hi)
		}
	}
	return others + " / " + leader
}

// spread formats the minimum and maximum of f over ms.
func spread(ms []member, f func(member) float64, format string) string {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, m := range ms {
		lo, hi = math.Min(lo, f(m)), math.Max(hi, f(m))
	}
	if fmt.Sprintf(format, lo) == fmt.Sprintf(format, hi) {
		return fmt.Sprintf(format, lo)
	}
	return fmt.Sprintf(format+"–"+format, lo, hi)
}

func seconds(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case math.IsInf(v, 1):
		return "> last bucket"
	}
	return fmt.Sprintf("%.3f", v)
}

func metOrMissed(ok bool) string {
	if ok {
		return "met"
	}
	return "missed"
}
