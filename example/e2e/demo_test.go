package e2e

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
)

// TestDemo builds the demo and runs it as a user would, with 20 objects: it
// must exit 0, report every object converged and every delete processed,
// and answer on /metrics while it runs.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo")
	}
	bin := build(t, "demo")
	ctx := contextFor(t)

	metricsURL := make(chan string, 1)
	urlRE := regexp.MustCompile(`metrics:\s+(http://\S+/metrics)`)
	p := start(t, bin, []string{"--objects", "20", "--timeout", "4m"}, func(line string) {
		if m := urlRE.FindStringSubmatch(line); m != nil {
			select {
			case metricsURL <- m[1]:
			default:
			}
		}
	})

	// Scrape /metrics while the demo runs, until the framework's metrics
	// appear (the operator has started).
	var scraped atomic.Bool
	scrapeDone := make(chan struct{})
	go func() {
		defer close(scrapeDone)
		var url string
		select {
		case url = <-metricsURL:
		case <-p.Done():
			return
		case <-ctx.Done():
			return
		}
		_ = wait.PollUntilContextCancel(ctx, 50*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			select {
			case <-p.Done():
				return true, nil
			default:
			}
			body, err := get(ctx, url)
			if err == nil && strings.Contains(body, "operatorkit_framework_reconciliations_total") {
				scraped.Store(true)
				return true, nil
			}
			return false, nil
		})
	}()

	if code := p.ExitCode(t, 5*time.Minute); code != 0 {
		t.Fatalf("demo exit code = %d, want 0", code)
	}
	<-scrapeDone
	out := p.Output()
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s+converged\s+15/15 remaining WebApps Ready`),
		regexp.MustCompile(`(?m)^\s+deletes processed\s+5/5 \(children left behind: 0\)`),
		regexp.MustCompile(`(?m)^\s+objects\s+20 created, 10 moved to release 2, 5 deleted`),
		regexp.MustCompile(`(?m)^\s+api requests\s+\d+ by the operator: .*patch \d+`),
		regexp.MustCompile(`(?m)^\s+reconcile latency\s+p50 \S+, p99 \S+`),
		regexp.MustCompile(`(?m)^result: OK`),
	} {
		if !want.MatchString(out) {
			t.Errorf("demo output lacks %s", want)
		}
	}
	if !scraped.Load() {
		t.Error("/metrics never answered with the framework's metrics while the demo ran")
	}
}

func get(ctx context.Context, url string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		return string(b), &httpError{res.StatusCode}
	}
	return string(b), err
}

type httpError struct{ code int }

func (e *httpError) Error() string { return http.StatusText(e.code) }

// TestDemoOnExistingCluster runs the demo with --cluster against an API
// server it did not start, twice into the same namespace: it must start
// none, converge there, delete the WebApps it left, and exit 0, so that
// the second run starts from nothing as the first did.
func TestDemoOnExistingCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo")
	}
	env, _ := startCluster(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := env.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	bin := build(t, "demo")
	ns := "demo-existing"
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		p := start(t, bin, []string{"--cluster", kubeconfig, "--namespace", ns, "--objects", "8", "--timeout", "4m"}, nil)
		if code := p.ExitCode(t, 5*time.Minute); code != 0 {
			t.Fatalf("run %d: demo exit code = %d, want 0\n%s", run, code, p.Output())
		}
		out := p.Output()
		for _, want := range []string{"connecting to the cluster of " + kubeconfig, "result: OK", "cleaning up: deleting the demo's WebApps in namespace " + ns + " ... ok, 8 gone"} {
			if !strings.Contains(out, want) {
				t.Errorf("run %d: demo output lacks %q:\n%s", run, want, out)
			}
		}
		if strings.Contains(out, "starting etcd and kube-apiserver") {
			t.Errorf("run %d: demo started an API server although --cluster was given:\n%s", run, out)
		}
		l, err := dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).List(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(l.Items) != 0 {
			t.Fatalf("run %d: %d WebApps left in %s after the demo", run, len(l.Items), ns)
		}
	}
}

// TestDemoHoldsUntilInterrupted: --hold keeps the API server and the
// operator running after the summary until Ctrl-C, also past --timeout
// (which bounds the demo's phases): it stopped at --timeout.
func TestDemoHoldsUntilInterrupted(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the demo")
	}
	bin := build(t, "demo")
	const timeout = 20 * time.Second
	holding := make(chan time.Time, 1)
	p := start(t, bin, []string{"--objects", "4", "--timeout", timeout.String(), "--hold"}, func(line string) {
		if strings.Contains(line, "press Ctrl-C to stop") {
			select {
			case holding <- time.Now():
			default:
			}
		}
	})
	started := time.Now()
	select {
	case <-holding:
	case <-p.Done():
		t.Fatalf("demo exited before holding:\n%s", p.Output())
	case <-time.After(2 * time.Minute):
		t.Fatalf("demo not holding within 2 minutes:\n%s", p.Output())
	}
	// Still running a while past --timeout: an exit before means the
	// hold ended by itself.
	past := time.Until(started.Add(timeout + 5*time.Second))
	select {
	case <-p.Done():
		t.Fatalf("demo stopped holding by itself %s after it started (--timeout %s):\n%s", time.Since(started).Round(time.Second), timeout, p.Tail(10))
	case <-time.After(past):
	}
	p.Signal(t, syscall.SIGINT)
	if code := p.ExitCode(t, time.Minute); code != 0 {
		t.Fatalf("demo exit code after Ctrl-C = %d, want 0:\n%s", code, p.Tail(10))
	}
	if !strings.Contains(p.Output(), "stopping") {
		t.Errorf("demo output lacks \"stopping\" after Ctrl-C:\n%s", p.Tail(10))
	}
}
