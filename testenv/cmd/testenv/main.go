// Command testenv builds and runs the test API server of package testenv
// outside a test.
//
//	testenv build                      build the server program (once) and print its path
//	testenv start [--kubeconfig PATH] [--rbac] [--crds PATH]...
//	                                   run a server until interrupted, with a kubeconfig
//	                                   for kubectl at PATH (default ./testenv.kubeconfig)
//	                                   and the CRDs of each --crds file or directory
//	                                   installed (testenv.Options.CRDs)
//
// `make test` runs `testenv build` first, so that test packages started in
// parallel find the program built. Everything else is in package testenv.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/operatorkit/operatorkit/testenv"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		// The package's errors say "testenv:" already.
		fmt.Fprintln(os.Stderr, "testenv:", strings.TrimPrefix(err.Error(), "testenv: "))
		os.Exit(1)
	}
}

func run(args []string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if len(args) == 0 {
		return fmt.Errorf("usage: testenv build | testenv start [--kubeconfig PATH] [--rbac] [--crds PATH]...")
	}
	switch args[0] {
	case "build":
		start := time.Now()
		bin, err := testenv.Build(ctx, os.Stderr)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "testenv: server program ready in %s\n", time.Since(start).Round(time.Millisecond))
		fmt.Println(bin)
		return nil
	case "start":
		fs := flag.NewFlagSet("start", flag.ContinueOnError)
		kubeconfig := fs.String("kubeconfig", "testenv.kubeconfig", "where to write the admin kubeconfig")
		rbac := fs.Bool("rbac", false, "authorize with RBAC instead of allowing everything")
		var crds []string
		fs.Func("crds", "a CRD manifest file, or a directory of them, to install (repeatable)", func(p string) error {
			crds = append(crds, p)
			return nil
		})
		if err := fs.Parse(args[1:]); err != nil {
			return err
		}
		env, err := testenv.Start(ctx, testenv.Options{RBAC: *rbac, CRDs: crds})
		if err != nil {
			return err
		}
		defer env.Stop()
		if err := env.WriteKubeconfig(*kubeconfig); err != nil {
			return err
		}
		fmt.Printf("API server at %s; kubeconfig in %s (kubectl --kubeconfig %s ...). Ctrl-C stops it.\n", env.Config().Host, *kubeconfig, *kubeconfig)
		<-ctx.Done()
		return nil
	}
	return fmt.Errorf("unknown command %q: want build or start", args[0])
}
