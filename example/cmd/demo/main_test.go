package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"

	"github.com/operatorkit/operatorkit/testenv"
)

// TestFlagErrors: a bad flag value ends the demo with exit code 2 and one
// line on stderr naming the flag, before it builds or starts the API
// server (some were found minutes later, by the server or the operator,
// with exit code 1).
func TestFlagErrors(t *testing.T) {
	// Were the demo to go on, it would fail at once, not start a server.
	t.Setenv(testenv.EnvAPIServer, filepath.Join(t.TempDir(), "no-server"))
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--objects", "3"}, "invalid value 3 for flag -objects: must be at least 4"},
		{[]string{"--workers", "0"}, "invalid value 0 for flag -workers: must be 1 to 10000"},
		{[]string{"--workers", "20000"}, "invalid value 20000 for flag -workers: must be 1 to 10000"},
		{[]string{"--timeout", "-1s"}, "invalid value -1s for flag -timeout: must be positive"},
		{[]string{"--namespace", "Bad_NS"}, `invalid value "Bad_NS" for flag -namespace: a lowercase RFC 1123 label`},
		{[]string{"--namespace="}, `invalid value "" for flag -namespace: a lowercase RFC 1123 label`},
		{[]string{"--image="}, "flag -image must not be empty"},
		{[]string{"--metrics-address", "8080"}, `invalid value "8080" for flag -metrics-address: address 8080: missing port in address`},
		{[]string{"--log-level", "loud"}, `invalid value "loud" for flag -log-level: want debug, info, warn or error`},
		{[]string{"--frobnicate"}, "flag provided but not defined: -frobnicate"},
		{[]string{"now"}, `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(context.Background(), tt.args, &stdout, &stderr); code != 2 {
				t.Errorf("exit code = %d, want 2", code)
			}
			if stdout.Len() > 0 {
				t.Errorf("stdout = %q, want nothing (the demo must not start)", stdout.String())
			}
			if got, want := stderr.String(), "demo: "+tt.want; !strings.HasPrefix(got, want) || strings.Count(got, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting %q", got, want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), []string{"-h"}, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "usage: demo [flags]") || stderr.Len() > 0 {
		t.Fatalf("-h: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// TestFailureBeforeLogs: a demo that fails before it logs anything (here
// the API server cannot be had; an interrupted first build is another)
// leaves no directory behind and points at no log file: it said "logs
// kept in" a file that did not exist, and left an empty directory in
// $TMPDIR per run.
func TestFailureBeforeLogs(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(testenv.EnvAPIServer, filepath.Join(t.TempDir(), "no-server"))
	var stdout, stderr bytes.Buffer
	if code := run(context.Background(), nil, &stdout, &stderr); code != 1 {
		t.Fatalf("exit code = %d, want 1 (stderr %q)", code, stderr.String())
	}
	if !strings.Contains(stderr.String(), testenv.EnvAPIServer) {
		t.Errorf("stderr = %q, want the reason", stderr.String())
	}
	if strings.Contains(stdout.String(), "logs kept in") {
		t.Errorf("stdout = %q, want no log file named: nothing was logged", stdout.String())
	}
	if left, _ := os.ReadDir(tmp); len(left) > 0 {
		t.Errorf("left in $TMPDIR: %v", left)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// TestDemoRedirectsKlog: while the demo runs, klog's lines (client-go's:
// reflectors, watches closed by an interrupt) go through the operator's
// logger into the log file, as the operator's Command sends them; they
// went to the terminal in klog's own format. A line logged with klog in
// the middle of a run, then interrupted, must be in the log file.
func TestDemoRedirectsKlog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	dir := t.TempDir()
	logFile := filepath.Join(dir, "operator.log")
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--objects", "4", "--timeout", "2m", "--log-file", logFile, "--kubeconfig", filepath.Join(dir, "kubeconfig")}, &stdout, &stderr)
	}()
	// Once the CRD is being installed, the operator's logger exists.
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		select {
		case code := <-done:
			return false, fmt.Errorf("the demo ended early: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
		default:
		}
		return strings.Contains(stdout.String(), "[2/6]"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const marker = "a klog line in the middle of the demo"
	klog.InfoS(marker, "from", "TestDemoRedirectsKlog")
	interrupt()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the interrupted demo did not end; stdout %q", stdout.String())
	}
	data, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	var line string
	for l := range strings.Lines(string(data)) {
		if strings.Contains(l, marker) {
			line = l
		}
	}
	if !strings.Contains(line, "level=info") || !strings.Contains(line, "caller=main_test.go:") || !strings.Contains(line, "from=TestDemoRedirectsKlog") {
		t.Errorf("klog's line in the log file = %q, want it as a logfmt line of the operator's logger (log file:\n%s)", line, data)
	}
}
