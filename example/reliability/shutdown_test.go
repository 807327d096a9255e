package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/testenv"
)

const finalizer = framework.FinalizerPrefix + "webapp-operator"

// operatorArgs are the flags of a webapp-operator run by the tests: the
// identity's kubeconfig, one namespace (and its Lease there), a free
// loopback port, debug logs.
func operatorArgs(kubeconfig, ns string, extra ...string) []string {
	return append([]string{
		"--kubeconfig", kubeconfig, "--namespace", ns, "--leader-election-namespace", ns,
		"--metrics-bind-address", "127.0.0.1:0", "--log-level", "debug", "--workers", "2",
	}, extra...)
}

// TestSIGTERMMidBurst: the webapp-operator binary, under the shipped
// ClusterRole with leader election, gets SIGTERM while it works through 50
// new WebApps. It stops taking work, lets the reconciliations in flight
// finish (none fails, and no WebApp is left half done: each one carrying
// the finalizer is Ready), releases its Lease and exits 0. A new run
// converges the rest. The WebApps' content never reaches its debug logs.
func TestSIGTERMMidBurst(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	_, cfg, _ := operatorIdentity(t, ns, nil)
	kubeconfig := kubeconfigFor(t, cfg)
	content := fmt.Sprintf("CONTENT-%d", rand.Int64())
	createSites(t, c, ns, content)

	p := startBinary(t, "operator", operatorArgs(kubeconfig, ns)...)
	p.waitFor(t, "reconciled", 10)
	sigterm := p.Signal(t, syscall.SIGTERM)
	if code := p.ExitCode(t, 60*time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	out := p.Output()
	for _, msg := range []string{"stopping: waiting for in-flight reconciliations", "stopped cleanly"} {
		if len(p.find(msg)) == 0 {
			t.Errorf("no %q in the logs", msg)
		}
	}
	inFlight := 0
	for _, r := range p.reconciliations() {
		if r.start.Before(sigterm) && r.end.After(sigterm) {
			inFlight++
		}
		if r.end.After(sigterm) && r.result != framework.ResultSuccess && r.result != framework.ResultRequeue {
			t.Errorf("%s: reconciliation ending after SIGTERM has result %s", r.object, r.result)
		}
	}
	apps, err := listWebApps(t.Context(), c, ns)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for name, w := range apps {
		if !slices.Contains(w.Finalizers, finalizer) {
			continue
		}
		done++
		if !ready(w) {
			t.Errorf("%s carries the finalizer but is not Ready: a reconciliation was cut short", name)
		}
	}
	t.Logf("SIGTERM after %d of %d WebApps were reconciled; %d reconciliation(s) in flight finished after it", done, n, inFlight)
	if done == n {
		t.Logf("note: the burst was over before SIGTERM arrived")
	}

	p = startBinary(t, "operator-again", operatorArgs(kubeconfig, ns)...)
	waitReady(t, c, ns, sites(0, n), 90*time.Second)
	p.Signal(t, syscall.SIGTERM)
	if code := p.ExitCode(t, 60*time.Second); code != 0 {
		t.Fatalf("second run: exit code after SIGTERM = %d, want 0", code)
	}
	if strings.Contains(out+p.Output(), content) {
		t.Error("the operator logged a WebApp's content")
	}
}

// TestShutdownMidBurstInProcess: the operator run in-process (webapp.New on
// an operator.Operator, whose Run it is)
// is stopped by its context during a burst of 50 WebApps: Run returns nil,
// the reconciliations in flight finish (every WebApp with the finalizer is
// Ready), and no goroutine is left behind.
func TestShutdownMidBurstInProcess(t *testing.T) {
	c := admin(t)
	ns := newNamespace(t)
	_, cfg, _ := operatorIdentity(t, ns, nil)
	createSites(t, c, ns, "hello")
	checkLeaks := testenv.LeakCheck(t)
	op := startInProcess(t, cfg, ns, 2)
	poll(t, "ten reconciliations", func(context.Context) (bool, error) { return op.reconciles(t, "") >= 10, nil })
	op.stop()
	reconciled := op.reconciles(t, "")
	checkLeaks()

	apps, err := listWebApps(t.Context(), c, ns)
	if err != nil {
		t.Fatal(err)
	}
	done := 0
	for name, w := range apps {
		if slices.Contains(w.Finalizers, finalizer) {
			done++
			if !ready(w) {
				t.Errorf("%s carries the finalizer but is not Ready: a reconciliation was cut short", name)
			}
		}
	}
	if got := op.reconciles(t, framework.ResultError); got != 0 {
		t.Errorf("%d failed reconciliations, want none", got)
	}
	t.Logf("stopped after %d reconciliations, %d of %d WebApps done", reconciled, done, n)
}
