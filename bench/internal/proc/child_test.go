package proc

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestStartChild(t *testing.T) {
	dir := t.TempDir()
	c, err := StartChild(exec.Command("sh", "-c", "echo to the log >&2; echo LISTEN 127.0.0.1:8080; exec sleep 60"), filepath.Join(dir, "ok.log"), "sleeper")
	if err != nil {
		t.Fatal(err)
	}
	if c.Addr != "127.0.0.1:8080" {
		t.Errorf("Addr = %q, want 127.0.0.1:8080", c.Addr)
	}
	if err := c.Exited(); err != nil {
		t.Errorf("Exited() = %v while running", err)
	}
	if err := c.Stop(10 * time.Second); err == nil {
		t.Error("Stop() = nil, want the exit error of a process ended by SIGTERM")
	}
	if err := c.Exited(); err == nil || !strings.Contains(err.Error(), "sleeper exited") || !strings.Contains(err.Error(), "to the log") {
		t.Errorf("Exited() = %v, want it to name the process and show its log", err)
	}

	_, err = StartChild(exec.Command("sh", "-c", "echo hello; exec sleep 60"), filepath.Join(dir, "bad.log"), "mute")
	if err == nil || !strings.Contains(err.Error(), `mute did not announce its address (got "hello\n")`) {
		t.Errorf("StartChild of a process without a LISTEN line = %v", err)
	}
}
