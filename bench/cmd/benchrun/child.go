package main

import (
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

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/bench/internal/stats"
)

// child is a running contender process.
type child struct {
	*proc.Child
	http *http.Client
}

// startChild starts the contender binary with args, its stderr (and any
// stdout after the LISTEN line) going to logPath, and waits for its LISTEN
// line. The process gets SIGTERM when ctx ends (SIGKILL 10 s later) and
// SIGKILL if the driver dies.
func startChild(ctx context.Context, bin string, args []string, logPath string) (*child, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	pc, err := proc.StartChild(cmd, logPath, fmt.Sprintf("contender %v", args))
	if err != nil {
		return nil, err
	}
	return &child{Child: pc, http: &http.Client{Timeout: 30 * time.Second}}, nil
}

// stop sends SIGTERM, waits up to 10 s, then kills.
func (c *child) stop() { _ = c.Stop(10 * time.Second) }

func (c *child) url(path string) string { return "http://" + c.Addr + path }

// waitReady polls /readyz until it answers 200.
func (c *child) waitReady(ctx context.Context, timeout time.Duration) error {
	return poll(ctx, timeout, 20*time.Millisecond, func() (bool, error) {
		if err := c.Exited(); err != nil {
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
		return s, fmt.Errorf("get stats: %w", errors.Join(err, c.Exited()))
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
	err := wait.PollUntilContextTimeout(ctx, interval, timeout, true, func(context.Context) (bool, error) { return cond() })
	if wait.Interrupted(err) {
		return fmt.Errorf("not done after %s: %w", timeout, err)
	}
	return err
}

// saveHeapProfile writes the contender's heap profile (GET /heap: the live
// heap after a collection) to path.
func (c *child) saveHeapProfile(path string) error { return c.save("/heap", path, true) }

// saveMetrics writes the contender's /metrics, when it serves them, to path.
func (c *child) saveMetrics(path string) error { return c.save("/metrics", path, false) }

// save writes the body of the contender's GET urlPath to path. An answer
// other than 200 is an error when required, else nothing is written.
func (c *child) save(urlPath, path string, required bool) error {
	resp, err := c.http.Get(c.url(urlPath))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		if required {
			return fmt.Errorf("GET %s: %s: %s", urlPath, resp.Status, b)
		}
		return nil
	}
	return os.WriteFile(path, b, 0o644)
}
