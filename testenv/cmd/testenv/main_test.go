package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/operatorkit/operatorkit/testenv"
)

// asCommand makes the test binary run main, for TestUsage.
const asCommand = "TESTENV_CMD_TEST_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(asCommand) != "" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestUsage runs the command as a user would: -h prints the usage on
// stdout and exits 0; a bad command, flag or argument is one line on
// stderr and exit code 2, before anything is built or started. -h exited
// 1 with "flag: help requested" or "unknown command", a bad flag printed
// the whole usage to stderr and exited 1, and stray arguments were
// ignored.
func TestUsage(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		code   int
		stdout string // substring
		stderr string // substring of the one line; "" for none
	}{
		{args: []string{"-h"}, stdout: "usage: testenv build | testenv start"},
		{args: []string{"--help"}, stdout: "-kubeconfig string"},
		{args: []string{"start", "-h"}, stdout: "usage: testenv start [--kubeconfig PATH]"},
		{args: nil, code: 2, stderr: "testenv: usage: testenv build | testenv start"},
		{args: []string{"run"}, code: 2, stderr: `testenv: unknown command "run": want build or start`},
		{args: []string{"start", "--bogus"}, code: 2, stderr: "testenv: flag provided but not defined: -bogus"},
		{args: []string{"start", "--rbac", "crds/"}, code: 2, stderr: `testenv: start takes flags only, got "crds/"`},
		{args: []string{"build", "now"}, code: 2, stderr: `testenv: build takes no arguments, got "now"`},
		// Were the command to go on, it fails at once: no server to run.
		{args: []string{"build"}, code: 1, stderr: "testenv: " + testenv.EnvAPIServer},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), os.Args[0], tt.args...)
			cmd.Env = append(os.Environ(), asCommand+"=1", testenv.EnvAPIServer+"="+filepath.Join(t.TempDir(), "no-server"))
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			code := 0
			if err := cmd.Run(); err != nil {
				var exit *exec.ExitError
				if !errors.As(err, &exit) {
					t.Fatal(err)
				}
				code = exit.ExitCode()
			}
			if code != tt.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.code, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if tt.stderr == "" {
				if stderr.Len() > 0 {
					t.Errorf("stderr = %q, want nothing", stderr.String())
				}
				return
			}
			if got := stderr.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, tt.stderr) {
				t.Errorf("stderr = %q, want one line containing %q", got, tt.stderr)
			}
		})
	}
}
