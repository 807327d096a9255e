package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestInterruptLeavesTheServerToItsProgram: Ctrl-C in a terminal (SIGINT
// to the foreground process group) reaches the program that runs the
// server, not the server: a program that handles it keeps its server
// until it stops it. The server was in the program's process group and
// shut down at once, under the program's clean-up.
func TestInterruptLeavesTheServerToItsProgram(t *testing.T) {
	t.Parallel() // a program and server of its own
	cmd := helperCmd(t, "interrupt")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // a terminal's foreground job
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	r := bufio.NewReader(out)
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("helper printed no line: %v\nstderr:\n%s", err, &stderr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("parse %q: %v", line, err)
	}
	if group, err := processGroup(pid); err != nil {
		t.Fatal(err)
	} else if group == cmd.Process.Pid {
		t.Errorf("server process %d is in its program's process group %d, which a terminal's Ctrl-C signals", pid, group)
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(r)
	if err := cmd.Wait(); err != nil || !strings.Contains(string(rest), "after the interrupt: <nil>") {
		t.Errorf("the program's request to its server after Ctrl-C: exit %v, stdout %q\nstderr:\n%s", err, rest, &stderr)
	}
}

// processGroup returns the process group of pid, from /proc.
func processGroup(pid int) (int, error) {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// pid (comm) state ppid pgrp ...: the fields after the last ')'.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 3 {
		return 0, io.ErrUnexpectedEOF
	}
	return strconv.Atoi(fields[2])
}

// TestStaleDirsRemoved: a test process killed together with its server
// (the whole process tree, the OOM killer) leaves the server's directory,
// etcd's data (about 120 MB), in the temporary directory; the next Start
// there removes it, and never the directory of a server that runs, in
// another process or in this one.
func TestStaleDirsRemoved(t *testing.T) {
	t.Parallel() // its own processes and temporary directory
	parent := t.TempDir()
	// hold starts a test process that holds a server in parent.
	hold := func() (cmd *exec.Cmd, pid int, dir string) {
		cmd = helperCmd(t, "hold", "TMPDIR="+parent)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil {
			t.Fatalf("helper printed no line: %v\nstderr:\n%s", err, &stderr)
		}
		var host string
		if _, err := fmt.Sscan(line, &pid, &host, &dir); err != nil {
			t.Fatalf("parse %q: %v", line, err)
		}
		return cmd, pid, dir
	}
	_, _, running := hold()
	killed, pid, stale := hold()
	// Both killed at once: neither can clean up.
	_ = syscall.Kill(pid, syscall.SIGKILL)
	_ = killed.Process.Kill()
	_ = killed.Wait()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return !alive(pid), nil
	}); err != nil {
		t.Fatalf("server process %d still running after SIGKILL", pid)
	}
	if _, err := os.Stat(stale); err != nil {
		t.Fatalf("the killed server's directory is not there to be removed: %v", err)
	}

	live := New(t, Options{Dir: parent})
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("directory %s of a killed test process and server left after the next Start: stat error = %v", stale, err)
	}
	if _, err := os.Stat(running); err != nil {
		t.Errorf("the directory %s of another process's running server was removed by Start: %v", running, err)
	}
	other := New(t, Options{Dir: parent})
	other.Stop()
	if _, err := os.Stat(live.dir); err != nil {
		t.Errorf("the directory %s of this process's running server was removed by another Start: %v", live.dir, err)
	}
}
