package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/operatorkit/operatorkit/operator"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestFlagErrorsAreOneLine runs the command the way a user would get it
// wrong and checks for one clear line on stderr and the exit code.
func TestFlagErrorsAreOneLine(t *testing.T) {
	dir := t.TempDir()
	unreachable := filepath.Join(dir, "unreachable.kubeconfig")
	if err := os.WriteFile(unreachable, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{name: "bad number", args: []string{"--workers", "many"}, wantCode: 2, want: `invalid value "many" for flag -workers`},
		{name: "zero workers", args: []string{"--workers", "0"}, wantCode: 2, want: "-workers: must be at least 1"},
		{name: "bad level", args: []string{"--log-level", "loud"}, wantCode: 2, want: "want debug, info, warn or error"},
		{name: "bad address", args: []string{"--metrics-bind-address", "8080"}, wantCode: 2, want: "--metrics-bind-address"},
		{name: "unknown flag", args: []string{"--frobnicate"}, wantCode: 2, want: "flag provided but not defined: -frobnicate"},
		{name: "stray argument", args: []string{"serve"}, wantCode: 2, want: `unexpected argument "serve"`},
		{name: "renew deadline", args: []string{"--leader-election-renew-deadline", "20s"}, wantCode: 2, want: "must be shorter than"},
		{name: "missing kubeconfig", args: []string{"--kubeconfig", filepath.Join(dir, "nope")}, wantCode: 1, want: "cannot load kubeconfig"},
		{name: "unreachable cluster", args: []string{"--kubeconfig", unreachable}, wantCode: 1, want: "cannot reach the API server at https://127.0.0.1:1"},
		{name: "plan without objects", args: []string{"plan"}, wantCode: 2, want: "name the WebApps to plan"},
		{name: "plan bad release", args: []string{"plan", "--release", "3", "--all"}, wantCode: 2, want: `invalid value "3" for flag -release`},
		{name: "plan bad key", args: []string{"plan", "ns/a/b"}, wantCode: 2, want: "want namespace/name"},
		{name: "plan unreachable", args: []string{"plan", "--kubeconfig", unreachable, "ns/a"}, wantCode: 1, want: "cannot reach the API server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			lines := strings.Split(strings.TrimRight(stderr.String(), "\n"), "\n")
			if len(lines) != 1 || !strings.HasPrefix(lines[0], "webapp-operator") || !strings.Contains(lines[0], tt.want) {
				t.Errorf("stderr = %q, want one line containing %q", stderr.String(), tt.want)
			}
		})
	}
}

func TestHelp(t *testing.T) {
	for _, args := range [][]string{{"-h"}, {"plan", "--help"}} {
		var stdout, stderr bytes.Buffer
		if code := run(context.Background(), args, &stdout, &stderr); code != 0 || !strings.Contains(stdout.String(), "usage: webapp-operator") {
			t.Fatalf("%v: exit %d, stdout %q", args, code, stdout.String())
		}
	}
}

func TestOperatorPermissionsFollowTheRole(t *testing.T) {
	opts := operator.Options{LeaderElect: true, LeaderElectionNamespace: "kube-system"}
	pc, err := preflightConfig(opts, operator.FrameworkOptions{Namespace: "apps"}, true)
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, p := range pc.Permissions {
		all = append(all, p.String())
	}
	got := strings.Join(all, "\n")
	for _, want := range []string{
		`watch webapps.example.operatorkit.io in namespace "apps"`,
		`patch webapps.example.operatorkit.io/status in namespace "apps"`,
		`delete deployments.apps in namespace "apps"`,
		`create events in namespace "apps"`,
		`update leases.coordination.k8s.io in namespace "kube-system"`,
		`create customresourcedefinitions.apiextensions.k8s.io in all namespaces`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("permissions lack %q:\n%s", want, got)
		}
	}
	if !pc.Served.Empty() {
		t.Errorf("with --install-crd the CRD must not be required: %v", pc.Served)
	}
	// --shard: the member Leases are also listed, watched and deleted.
	pc, err = preflightConfig(operator.Options{Shard: true, LeaderElectionNamespace: "ops"}, operator.FrameworkOptions{Namespace: "apps"}, false)
	if err != nil {
		t.Fatal(err)
	}
	all = nil
	for _, p := range pc.Permissions {
		all = append(all, p.String())
	}
	got = strings.Join(all, "\n")
	for _, want := range []string{
		`patch webapps.example.operatorkit.io in namespace "apps"`,
		`list leases.coordination.k8s.io in namespace "ops"`,
		`watch leases.coordination.k8s.io in namespace "ops"`,
		`delete leases.coordination.k8s.io in namespace "ops"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("--shard: permissions lack %q:\n%s", want, got)
		}
	}
	for _, installCRD := range []bool{false, true} { // a dry run installs nothing
		pc, err = preflightConfig(operator.Options{}, operator.FrameworkOptions{DryRun: true}, installCRD)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pc.Permissions {
			if p.Verb != "get" && p.Verb != "list" && p.Verb != "watch" { // get: the Framework reads an object it lost from its cache
				t.Errorf("dry run (--install-crd=%v) checks %s", installCRD, p)
			}
		}
		if pc.Served.Resource != "webapps" {
			t.Errorf("a dry run (--install-crd=%v) needs the CRD served: %v", installCRD, pc.Served)
		}
	}
}

// TestDoesNotLinkTheAPIServer keeps the operator binary small: it must not
// depend on testenv or k8s.io/kubernetes (the demo does).
func TestDoesNotLinkTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list")
	}
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "k8s.io/kubernetes") || strings.Contains(dep, "operatorkit/testenv") || strings.HasPrefix(dep, "go.etcd.io/etcd/server") {
			t.Fatalf("webapp-operator depends on %s", dep)
		}
	}
}
