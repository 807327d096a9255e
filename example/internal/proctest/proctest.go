// Package proctest runs a binary under test and keeps its output lines: the
// part the example's end-to-end and reliability tests share.
package proctest

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Config says how Start runs a binary.
type Config struct {
	// Name names the process in failures and logs.
	Name string
	// OnLine, if set, is called with every line of stdout and stderr, in
	// order, from one goroutine.
	OnLine func(line string)
	// TailOnFailure is how many of the last lines are logged when the test
	// failed; 0 logs them all.
	TailOnFailure int
}

// Process is a started binary whose stdout and stderr lines are kept. It is
// killed, if still running, when the test ends.
type Process struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error

	mu    sync.Mutex
	lines []string
}

// Start runs bin with args, failing the test if it cannot start.
func Start(t testing.TB, cfg Config, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{name: cfg.Name, cmd: exec.Command(bin, args...), done: make(chan struct{})}
	pr, pw := io.Pipe()
	p.cmd.Stdout, p.cmd.Stderr = pw, pw
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var reader sync.WaitGroup
	reader.Go(func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			if cfg.OnLine != nil {
				cfg.OnLine(line)
			}
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner: keep the process unblocked
	})
	go func() {
		p.err = p.cmd.Wait()
		pw.Close()
		reader.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", p.name, p.Tail(cfg.TailOnFailure))
		}
	})
	return p
}

// Done is closed when the process has exited and its output is read.
func (p *Process) Done() <-chan struct{} { return p.done }

// Output returns every line so far.
func (p *Process) Output() string { return p.Tail(0) }

// Tail returns the last k lines so far; all of them when k is 0.
func (p *Process) Tail(k int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	from := 0
	if k > 0 {
		from = max(0, len(p.lines)-k)
	}
	return strings.Join(p.lines[from:], "\n")
}

// Signal sends sig to the process and returns when it did.
func (p *Process) Signal(t testing.TB, sig syscall.Signal) time.Time {
	t.Helper()
	at := time.Now()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal %s: %v", p.name, err)
	}
	return at
}

// ExitCode waits up to timeout for the process to exit and returns its exit
// code (-1: killed by a signal). It fails the test on a timeout.
func (p *Process) ExitCode(t testing.TB, timeout time.Duration) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(timeout):
		t.Fatalf("%s still running after %s", p.name, timeout)
	}
	if p.err == nil {
		return 0
	}
	if ee, ok := p.err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	t.Fatalf("%s: %v", p.name, p.err)
	return -1
}
