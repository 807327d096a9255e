//go:build unix

package operator

import (
	"context"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-kit/log"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/framework"
)

// stuckCommand returns a Command whose one Framework's reconciliation of
// ns/a blocks, ignoring its context, until ops.release is closed, and the
// arguments that run it without leader election or HTTP endpoints; op
// receives its Operator.
func stuckCommand(t *testing.T, ops stuckOps, op chan<- *Operator) (Command, []string) {
	t.Helper()
	cfg, _, _ := apiServer(t, "ns/a")
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, cfg.Host); err != nil {
		t.Fatal(err)
	}
	cmd := Command{
		Name: "thing-operator",
		New: func(o *Operator, _ FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			op <- o
			return o.NewFramework(stuckConfig(t, o, stuckApplyOps{ops}))
		},
	}
	return cmd, []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}
}

// TestCommandSecondSignalStopsAtOnce: the first SIGTERM begins the clean
// stop, which waits for a reconciliation that ignores its context (up to
// ShutdownTimeout, 25 s); a second SIGTERM ends Command.Run at once, with
// exit code 1 and a line saying so, as controller-runtime's signal handler
// exits on the second signal. The second signal did nothing: a stuck
// shutdown could not be cut short. The binary's main catches the signals
// as the example's does (signal.NotifyContext).
func TestCommandSecondSignalStopsAtOnce(t *testing.T) {
	ops := stuckOps{entered: make(chan struct{}, 1), release: make(chan struct{})}
	defer close(ops.release)
	ops2 := make(chan *Operator, 1)
	cmd, args := stuckCommand(t, ops, ops2)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() { code <- cmd.Run(ctx, args, &stdout, &stderr) }()
	select {
	case <-ops.entered:
	case c := <-code:
		t.Fatalf("Command.Run returned %d before reconciling; stderr %q", c, stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("the reconciliation did not start within a minute")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the first SIGTERM did not arrive within a minute")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case c := <-code:
		want := "thing-operator: second signal (terminated): stopped without waiting for the shutdown to end"
		if c != 1 || !strings.Contains(stderr.String(), want) {
			t.Errorf("Command.Run after a second SIGTERM = %d, stderr %q; want 1 and the line %q", c, stderr.String(), want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Command.Run did not return within 10 s of a second SIGTERM (the shutdown waits for a stuck reconciliation)")
	}
}

// lateWriter notes the lines written to it once returned is set.
type lateWriter struct {
	mu       sync.Mutex
	returned bool
	late     []string
}

func (w *lateWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.returned {
		w.late = append(w.late, string(p))
	}
	return len(p), nil
}

func (w *lateWriter) lines() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.late)
}

// TestCommandWritesNothingAfterItReturned: after a second signal Command.Run
// returns while the Operator still runs (as it does past ShutdownTimeout);
// what the Operator then logs must not reach the caller's stderr, which may
// be a buffer the caller reads once Run returned (a data race). The
// Operator's lines, such as "frameworks stopped", were written to it after
// Run had returned.
func TestCommandWritesNothingAfterItReturned(t *testing.T) {
	ops := stuckOps{entered: make(chan struct{}, 1), release: make(chan struct{})}
	released := false
	defer func() {
		if !released {
			close(ops.release)
		}
	}()
	opc := make(chan *Operator, 1)
	cmd, args := stuckCommand(t, ops, opc)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	var stdout, stderr lateWriter
	code := make(chan int, 1)
	go func() { code <- cmd.Run(ctx, args, &stdout, &stderr) }()
	select {
	case <-ops.entered:
	case c := <-code:
		t.Fatalf("Command.Run returned %d before reconciling", c)
	case <-time.After(time.Minute):
		t.Fatal("the reconciliation did not start within a minute")
	}
	op := <-opc
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// The second only once the first arrived: the runtime merges a signal
	// sent while the same one is pending.
	select {
	case <-ctx.Done():
	case <-time.After(time.Minute):
		t.Fatal("the first SIGTERM did not arrive within a minute")
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-code:
	case <-time.After(time.Minute):
		t.Fatal("Command.Run did not return within a minute of a second SIGTERM")
	}
	for _, w := range []*lateWriter{&stdout, &stderr} {
		w.mu.Lock()
		w.returned = true
		w.mu.Unlock()
	}
	close(ops.release) // the Operator stops now, and logs it
	released = true
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return !op.informing.Load(), nil
	}); err != nil {
		t.Fatal("the Operator did not stop within a minute of the reconciliation's end")
	}
	if late := stderr.lines(); len(late) > 0 {
		t.Errorf("stderr written after Command.Run returned: %q", late)
	}
	if late := stdout.lines(); len(late) > 0 {
		t.Errorf("stdout written after Command.Run returned: %q", late)
	}
}
