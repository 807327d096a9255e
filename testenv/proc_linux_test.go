package testenv

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
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
