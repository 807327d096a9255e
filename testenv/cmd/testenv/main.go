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
//
// Exit codes: 0 when done (or after -h, whose usage goes to stdout), 2 for a
// bad command, flag or argument, 1 when the build or the server fails.
// Every failure is one line "testenv: <error>" on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/operatorkit/operatorkit/testenv"
)

const usage = "usage: testenv build | testenv start [--kubeconfig PATH] [--rbac] [--crds PATH]..."

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run runs the command with args (without the program name) and returns
// its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fail := func(code int, err error) int {
		// The package's errors say "testenv:" already.
		fmt.Fprintln(stderr, "testenv:", strings.TrimPrefix(err.Error(), "testenv: "))
		return code
	}
	if len(args) == 0 {
		return fail(2, errors.New(usage))
	}
	fs := flag.NewFlagSet("testenv "+args[0], flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	kubeconfig := fs.String("kubeconfig", "testenv.kubeconfig", "where to write the admin kubeconfig")
	rbac := fs.Bool("rbac", false, "authorize with RBAC instead of allowing everything")
	var crds []string
	fs.Func("crds", "a CRD manifest file, or a directory of them, to install (repeatable)", func(p string) error {
		crds = append(crds, p)
		return nil
	})
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprintln(stdout, usage+"\n\nFlags of start:")
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		return 0
	case "build":
		if len(args) > 1 {
			return fail(2, fmt.Errorf("build takes no arguments, got %q", args[1]))
		}
		start := time.Now()
		bin, err := testenv.Build(ctx, stderr)
		if err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stderr, "testenv: server program ready in %s\n", time.Since(start).Round(time.Millisecond))
		fmt.Fprintln(stdout, bin)
		return 0
	case "start":
		switch err := fs.Parse(args[1:]); {
		case errors.Is(err, flag.ErrHelp):
			fmt.Fprintln(stdout, "usage: testenv start [--kubeconfig PATH] [--rbac] [--crds PATH]...\n\nFlags:")
			fs.SetOutput(stdout)
			fs.PrintDefaults()
			return 0
		case err != nil:
			return fail(2, err)
		case fs.NArg() > 0:
			return fail(2, fmt.Errorf("start takes flags only, got %q", fs.Arg(0)))
		}
		env, err := testenv.Start(ctx, testenv.Options{RBAC: *rbac, CRDs: crds})
		if err != nil {
			return fail(1, err)
		}
		defer env.Stop()
		if err := env.WriteKubeconfig(*kubeconfig); err != nil {
			return fail(1, err)
		}
		fmt.Fprintf(stdout, "API server at %s; kubeconfig in %s (kubectl --kubeconfig %s ...). Ctrl-C stops it.\n", env.Config().Host, *kubeconfig, *kubeconfig)
		<-ctx.Done()
		return 0
	}
	return fail(2, fmt.Errorf("unknown command %q: want build or start", args[0]))
}
