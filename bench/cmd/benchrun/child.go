package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/operatorkit/operatorkit/bench/internal/stats"
)

// child is a running contender process.
type child struct {
	cmd     *exec.Cmd
	addr    string
	logPath string
	done    chan struct{}
	waitErr error
	http    *http.Client
}

// startChild starts the contender binary with args, its stderr (and any
// stdout after the LISTEN line) going to logPath, and waits for its LISTEN
// line. The process gets SIGTERM when ctx ends (SIGKILL 10 s later) and
// SIGKILL if the driver dies.
func startChild(ctx context.Context, bin string, args []string, logPath string) (*child, error) {
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	cmd.Stderr = logFile
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		logFile.Close()
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	c := &child{cmd: cmd, logPath: logPath, done: make(chan struct{}), http: &http.Client{Timeout: 30 * time.Second}}
	lines := make(chan string, 1)
	go func() {
		r := bufio.NewReader(stdout)
		line, _ := r.ReadString('\n')
		lines <- line
		_, _ = io.Copy(logFile, r)
	}()
	go func() {
		c.waitErr = cmd.Wait()
		logFile.Close()
		close(c.done)
	}()
	select {
	case line := <-lines:
		addr, ok := strings.CutPrefix(strings.TrimSpace(line), "LISTEN ")
		if !ok {
			c.stop()
			return nil, fmt.Errorf("contender %v did not announce its listener (got %q); log: %s", args, line, c.tail())
		}
		c.addr = addr
		return c, nil
	case <-time.After(time.Minute):
		c.stop()
		return nil, fmt.Errorf("contender %v: no LISTEN line within a minute; log: %s", args, c.tail())
	}
}

// pid returns the process id.
func (c *child) pid() int { return c.cmd.Process.Pid }

// stop sends SIGTERM, waits up to 10 s, then kills.
func (c *child) stop() {
	select {
	case <-c.done:
		return
	default:
	}
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-c.done:
	case <-time.After(10 * time.Second):
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// exited returns an error when the process is no longer running.
func (c *child) exited() error {
	select {
	case <-c.done:
		return fmt.Errorf("contender exited: %v; log: %s", c.waitErr, c.tail())
	default:
		return nil
	}
}

// tail returns the last lines of the contender's log.
func (c *child) tail() string {
	b, err := os.ReadFile(c.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 15 {
		lines = lines[len(lines)-15:]
	}
	return c.logPath + ":\n  " + strings.Join(lines, "\n  ")
}

func (c *child) url(path string) string { return "http://" + c.addr + path }

// waitReady polls /readyz until it answers 200.
func (c *child) waitReady(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, timeout, 20*time.Millisecond, func() (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		resp, err := c.http.Get(c.url("/readyz"))
		if err != nil {
			return false, nil
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK, nil
	})
}

// stats fetches the contender's counters.
func (c *child) stats() (stats.Stats, error) {
	var s stats.Stats
	resp, err := c.http.Get(c.url("/stats"))
	if err != nil {
		return s, fmt.Errorf("get stats: %w", errors.Join(err, c.exited()))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return s, fmt.Errorf("get stats: %s", resp.Status)
	}
	return s, json.NewDecoder(resp.Body).Decode(&s)
}

// enqueueAll asks the contender to enqueue every cached Item.
func (c *child) enqueueAll() (int, error) {
	resp, err := c.http.Post(c.url("/enqueue-all"), "text/plain", nil)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("enqueue-all: %s: %s", resp.Status, b)
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// poll calls cond every interval until it returns true or an error, or
// timeout passes.
func poll(ctx context.Context, timeout, interval time.Duration, cond func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		ok, err := cond()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not done after %s: %w", timeout, ctx.Err())
		case <-t.C:
		}
	}
}

// saveMetrics writes the contender's /metrics, when it serves them, to path.
func (c *child) saveMetrics(path string) error {
	resp, err := c.http.Get(c.url("/metrics"))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
