// Command webapp-operator runs the example WebApp operator against a
// Kubernetes cluster, or shows what it would change.
//
//	webapp-operator [flags]                         run the operator until SIGTERM or SIGINT
//	webapp-operator plan [flags] (namespace/name... | --all)
//	                                                print what a release would change, applying nothing
//
// The command line is operator.Command's: the cluster is the one of
// --kubeconfig, else of $KUBECONFIG, else the in-cluster configuration, else
// ~/.kube/config. At start the command checks that the API server answers,
// that the WebApp CRD is served (unless --install-crd, which a --dry-run
// ignores: it writes nothing) and that its identity has every permission of
// example/config/rbac/role.yaml it needs; a problem ends it with one line on
// stderr and exit code 1 (2 for a bad flag). A clean shutdown exits 0. plan
// --release N plans under release N instead of the one each WebApp's label
// routes it to. --shard runs it as one of several replicas that share the
// WebApps (operator.Sharding), each reconciling its share.
//
// This command does not link testenv, which builds and starts the test API
// server as a child process; the demo command does.
package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/go-kit/log"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/operator"
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
	var installCRD bool
	return operator.Command{
		Name:             cmdName,
		Summary:          "Runs the WebApp operator until SIGTERM or SIGINT.",
		Objects:          "WebApps",
		Options:          operator.Options{HealthProbeBindAddress: "0"},
		FrameworkOptions: operator.FrameworkOptions{Workers: 2},
		BindFlags: func(fs *flag.FlagSet) {
			fs.BoolVar(&installCRD, "install-crd", false, "create or update the WebApp CRD at start (needs the rules of config/rbac/crd_installer_role.yaml; not with --dry-run, which writes nothing)")
		},
		Check: func(ctx context.Context, restConfig *rest.Config, opts operator.Options, fopts operator.FrameworkOptions) error {
			preflight, err := preflightConfig(opts, fopts, installCRD)
			if err != nil {
				return err
			}
			return operator.Preflight(ctx, restConfig, preflight)
		},
		New: func(op *operator.Operator, fopts operator.FrameworkOptions, logger log.Logger) (*framework.Framework, error) {
			w, err := webapp.New(webapp.Config{Operator: op, Options: fopts, InstallCRD: installCRD, Logger: logger})
			if err != nil {
				return nil, err
			}
			return w.Framework(), nil
		},
		ShardResources: []schema.GroupVersionResource{v1alpha1.GroupVersionResource},
		ShardChildren:  webapp.ChildResources,
		SetFlag:        "release",
		Sets:           map[string]string{webapp.Release1: "release-" + webapp.Release1, webapp.Release2: "release-" + webapp.Release2},
	}.Run(ctx, args, stdout, stderr)
}

// preflightConfig checks what the shipped ClusterRole grants that the
// operator run with opts and fopts needs (operator.Permissions), the rules
// of the CRD installer role with installCRD (unless --dry-run, which
// installs nothing), and otherwise that the CRD is installed.
func preflightConfig(opts operator.Options, fopts operator.FrameworkOptions, installCRD bool) (operator.PreflightConfig, error) {
	role, err := config.ClusterRole()
	crdRole, crdErr := config.CRDInstallerClusterRole()
	if err := errors.Join(err, crdErr); err != nil {
		return operator.PreflightConfig{}, err
	}
	if installCRD && !fopts.DryRun {
		return operator.PreflightConfig{Permissions: append(operator.Permissions(role.Rules, opts, fopts), operator.PermissionsOf(crdRole.Rules, "", nil)...)}, nil
	}
	return operator.PreflightConfig{Permissions: operator.Permissions(role.Rules, opts, fopts), Served: v1alpha1.GroupVersionResource}, nil
}
