package testenv

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestModuleVersionsMatchServer checks that every module this package is
// built with (client-go, k8s.io/api, golang.org/x/net, protobuf, ...) has the
// version that the server program's go.mod.txt builds it with. A package
// compiled with other versions of its dependencies is a different package to
// the build cache: when they differed (testenv's go.mod was behind on
// golang.org/x/net, x/sys, x/text and protobuf), `make test` compiled 152 of
// the 260 packages of cmd/testenv twice without the race detector, all of
// k8s.io/api among them: minutes of CPU on a cold 2-core machine (docs/ci.md,
// sixth session).
func TestModuleVersionsMatchServer(t *testing.T) {
	goBin, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	// The modules of the packages cmd/testenv and this package's tests build
	// with (a test binary's build info lists none), by testenv's go.mod alone.
	cmd := exec.CommandContext(t.Context(), goBin, "list", "-deps", "-test",
		"-f", "{{with .Module}}{{.Path}} {{.Version}}{{with .Replace}} {{.Version}}{{end}}{{end}}", ".", "./cmd/testenv")
	cmd.Env = buildEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", errors.Join(err, exitStderr(err)))
	}
	server := serverModuleVersions(t, goBin)
	if server["k8s.io/client-go"] == "" {
		t.Fatalf("apiserver/go.mod.txt: no version of k8s.io/client-go found in %d modules", len(server))
	}
	checked := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) < 2 || checked[f[0]] {
			continue // the main module has no version; a module has many packages
		}
		want, ok := server[f[0]]
		if !ok {
			continue // not part of the server's build (goleak, sigs.k8s.io/yaml)
		}
		checked[f[0]] = true
		if got := f[len(f)-1]; got != want {
			t.Errorf("testenv builds with %s %s, the server program with %s: the packages both build compile twice; "+
				"run `go get %s@%s` in testenv", f[0], got, want, f[0], want)
		}
	}
	if len(checked) < 20 {
		t.Errorf("only %d modules of testenv's build found in apiserver/go.mod.txt; go mod edit -json read no requirements", len(checked))
	}
}

// exitStderr returns what a failed command printed on stderr, as an error.
func exitStderr(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) && len(ee.Stderr) > 0 {
		return errors.New(strings.TrimSpace(string(ee.Stderr)))
	}
	return nil
}

// serverModuleVersions returns the version of each module in the server
// program's go.mod.txt, as go mod edit reads it: the required one, or its
// replacement's when a replace directive names a module version (the
// server's go.mod requires the k8s.io staging modules as v0.0.0 and
// replaces them).
func serverModuleVersions(t *testing.T, goBin string) map[string]string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), goBin, "mod", "edit", "-json", filepath.Join("apiserver", "go.mod.txt"))
	cmd.Env = buildEnv(os.Environ())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go mod edit: %v", errors.Join(err, exitStderr(err)))
	}
	type module struct{ Path, Version string }
	var gomod struct {
		Require []module
		Replace []struct{ Old, New module }
	}
	if err := json.Unmarshal(out, &gomod); err != nil {
		t.Fatalf("go mod edit -json: %v", err)
	}
	versions := map[string]string{}
	for _, r := range gomod.Require {
		versions[r.Path] = r.Version
	}
	for _, r := range gomod.Replace {
		if r.New.Version != "" { // not a directory
			versions[r.Old.Path] = r.New.Version
		}
	}
	return versions
}
