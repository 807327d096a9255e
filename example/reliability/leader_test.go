package reliability

import (
	"fmt"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Leader election timing of the replicas (flags of webapp-operator).
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 500 * time.Millisecond
)

// TestLeaderElectionHandover: two replicas of the webapp-operator binary
// with leader election, under the shipped ClusterRole. Replica a leads
// through a burst of 50 new WebApps and gets SIGTERM in the middle: it
// finishes its reconciliations in flight, releases the Lease and b takes
// over within the lease duration. A third replica c joins; b is killed
// (SIGKILL, no release) in the middle of a burst of spec changes: c takes
// over within the lease duration plus the candidates' retry periods. Every WebApp
// converges to its last spec, and no WebApp was ever reconciled by two
// replicas at once (each replica's reconciliations, from its debug log, as
// intervals per WebApp: none overlap).
func TestLeaderElectionHandover(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	_, cfg, _ := operatorIdentity(t, ns, nil)
	kubeconfig := kubeconfigFor(t, cfg)
	args := operatorArgs(kubeconfig, ns,
		"--leader-election-lease-duration", leaseDuration.String(),
		"--leader-election-renew-deadline", renewDeadline.String(),
		"--leader-election-retry-period", retryPeriod.String())
	createSites(t, c, ns, "v1")

	a := startBinary(t, "a", args...)
	a.waitFor(t, "leading: starting the operator", 1)
	b := startBinary(t, "b", args...)
	b.waitFor(t, "another replica leads", 1)

	// Hand-over on SIGTERM.
	a.waitFor(t, "reconciled", 10)
	a.Signal(t, syscall.SIGTERM)
	if code := a.ExitCode(t, 60*time.Second); code != 0 {
		t.Fatalf("a: exit code after SIGTERM = %d, want 0", code)
	}
	aStopped := a.waitFor(t, "stopped cleanly", 1)[0].ts()
	bLeads := b.waitFor(t, "leading: starting the operator", 1)[0].ts()
	if d := bLeads.Sub(aStopped); d > leaseDuration {
		t.Errorf("b took over %s after a released the Lease, want within the lease duration %s", d, leaseDuration)
	} else {
		t.Logf("b took over %s after a stopped", d.Round(time.Millisecond))
	}
	waitReady(t, c, ns, sites(0, n), 90*time.Second)

	// Hand-over on a crash.
	cr := startBinary(t, "c", args...)
	cr.waitFor(t, "another replica leads", 1)
	before := len(b.find("reconciled"))
	for i := range n {
		patchWebApp(t, c, ns, siteName(i), `{"spec":{"content":"v2"}}`)
	}
	b.waitFor(t, "reconciled", before+10)
	killed := b.Signal(t, syscall.SIGKILL)
	b.ExitCode(t, 30*time.Second)
	cLeads := cr.waitFor(t, "leading: starting the operator", 1)[0].ts()
	// A candidate takes the Lease once it has not seen it renewed for the
	// lease duration. It looks every retry period plus up to 120% jitter
	// (client-go's JitterFactor 1.2), so it notices the last renewal up to
	// one such period late and the expiry up to one more; 500ms more for the
	// requests and a loaded machine.
	jittered := retryPeriod * 22 / 10
	if d, limit := cLeads.Sub(killed), leaseDuration+2*jittered+500*time.Millisecond; d > limit {
		t.Errorf("c took over %s after b was killed, want within %s (the lease duration plus retry periods)", d, limit)
	} else {
		t.Logf("c took over %s after b was killed", d.Round(time.Millisecond))
	}
	got := waitReady(t, c, ns, sites(0, n), 90*time.Second)
	for name, w := range got {
		if w.Spec.Content != "v2" {
			t.Errorf("%s: content %q, want v2", name, w.Spec.Content)
		}
	}

	// No WebApp was reconciled by two replicas at once.
	byObject := map[string][]interval{}
	total := map[string]int{}
	for _, p := range []*process{a, b, cr} {
		for _, r := range p.reconciliations() {
			byObject[r.object] = append(byObject[r.object], r)
			total[p.name]++
		}
	}
	var overlaps []string
	for obj, rs := range byObject {
		sort.Slice(rs, func(i, j int) bool { return rs[i].start.Before(rs[j].start) })
		for i := 1; i < len(rs); i++ {
			if prev := rs[i-1]; rs[i].start.Before(prev.end) {
				overlaps = append(overlaps, fmt.Sprintf("%s: %s [%s, %s] and %s [%s, %s]", obj,
					prev.replica, prev.start.Format(time.StampMicro), prev.end.Format(time.StampMicro),
					rs[i].replica, rs[i].start.Format(time.StampMicro), rs[i].end.Format(time.StampMicro)))
			}
		}
	}
	if len(overlaps) > 0 {
		t.Errorf("%d overlapping reconciliations:\n%s", len(overlaps), strings.Join(overlaps, "\n"))
	}
	if total["a"] == 0 || total["b"] == 0 || total["c"] == 0 {
		t.Errorf("reconciliations per replica %v: every replica should have led once", total)
	}
	t.Logf("reconciliations per replica %v over %d WebApps, none overlapping", total, len(byObject))

	lease, err := c.kube.CoordinationV1().Leases(ns).Get(t.Context(), "webapp-operator", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if id := lease.Spec.HolderIdentity; id == nil || !strings.Contains(cr.Output(), *id) {
		t.Errorf("Lease holder %v, want replica c", id)
	}
	cr.Signal(t, syscall.SIGTERM)
	if code := cr.ExitCode(t, 60*time.Second); code != 0 {
		t.Errorf("c: exit code after SIGTERM = %d, want 0", code)
	}
}
