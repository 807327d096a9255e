// Command webapp-operator runs the example WebApp operator against a
// Kubernetes cluster, or shows what it would change.
//
//	webapp-operator [flags]                         run the operator until SIGTERM or SIGINT
//	webapp-operator plan [flags] (namespace/name... | --all)
//	                                                print what a release would change, applying nothing
//
// The cluster is the one of --kubeconfig, else of $KUBECONFIG, else the
// in-cluster configuration, else ~/.kube/config. At start the command checks
// that the API server answers, that the WebApp CRD is served (unless
// --install-crd) and that its identity has every permission of
// example/config/rbac/role.yaml it needs; a problem ends it with one line
// on stderr and exit code 1 (2 for a bad flag). A clean shutdown exits 0.
//
// This command does not link the in-process API server (testenv); the demo
// command does.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
)

const cmdName = "webapp-operator"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command with args (without the program name) and returns
// its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "plan" {
		return runPlan(ctx, args[1:], stdout, stderr)
	}
	return runOperator(ctx, args, stdout, stderr)
}
