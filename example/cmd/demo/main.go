// Command demo shows the example WebApp operator at work against a real
// kube-apiserver that it starts as a child process (testenv: etcd and the API
// server built from Go modules, nothing downloaded):
//
//  1. start the API server and write a kubeconfig for kubectl (or, with
//     --cluster KUBECONFIG, use an existing cluster and start none);
//  2. install the WebApp CRD with crdclient;
//  3. start the operator (the same code as webapp-operator);
//  4. create --objects WebApps and wait until they converge;
//  5. move half of them to release 2 and wait for their Services;
//  6. delete a quarter and wait until their children are gone;
//
// then print a summary (objects, reconciles by result, API requests by verb,
// wall time, reconcile latency) and exit 0 when everything converged, or 1
// with the reason when not (or when --timeout passes). Convergence is read
// from the API server, not taken from the operator. --hold keeps the server
// running after the summary until Ctrl-C, for kubectl.
//
// The first run builds the API server program (testenv.Build: minutes, and
// it says so; not counted in --timeout); later runs find it in the cache and
// start in seconds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/operatorkit/operatorkit/example/internal/cli"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/operator"
)

const cmdName = "demo"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the demo's flags.
type options struct {
	objects        int
	namespace      string
	workers        int
	timeout        time.Duration
	hold           bool
	kubeconfig     string
	cluster        string
	metricsAddress string
	logLevel       string
	logFile        string
	image          string
}

// validate returns nil or an error naming the first flag with a bad value.
func (o options) validate() error {
	switch {
	case o.objects < 4:
		return fmt.Errorf("invalid value %d for flag -objects: must be at least 4", o.objects)
	case o.workers < 1 || o.workers > framework.MaxWorkers:
		return fmt.Errorf("invalid value %d for flag -workers: must be 1 to %d", o.workers, framework.MaxWorkers)
	case o.timeout <= 0:
		return fmt.Errorf("invalid value %s for flag -timeout: must be positive", o.timeout)
	case o.image == "":
		return errors.New("flag -image must not be empty")
	}
	if msgs := validation.IsDNS1123Label(o.namespace); len(msgs) > 0 {
		return fmt.Errorf("invalid value %q for flag -namespace: %s", o.namespace, strings.Join(msgs, "; "))
	}
	if _, _, err := net.SplitHostPort(o.metricsAddress); err != nil {
		return fmt.Errorf("invalid value %q for flag -metrics-address: %s", o.metricsAddress, oneLine(err))
	}
	if _, err := operator.NewLogger(io.Discard, o.logLevel, "logfmt"); err != nil {
		return fmt.Errorf("invalid value %q for flag -log-level: want debug, info, warn or error", o.logLevel)
	}
	return nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	var o options
	fs := flag.NewFlagSet(cmdName, flag.ContinueOnError)
	fs.IntVar(&o.objects, "objects", 200, "number of WebApps to create (at least 4)")
	fs.StringVar(&o.namespace, "namespace", "demo", "namespace of the WebApps")
	fs.IntVar(&o.workers, "workers", 4, "operator workers (objects reconciled at the same time)")
	fs.DurationVar(&o.timeout, "timeout", 5*time.Minute, "give up (exit 1) when the demo has not finished by then")
	fs.BoolVar(&o.hold, "hold", false, "after the summary, keep the API server and the operator running until Ctrl-C")
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "where to write the kubeconfig of the demo's API server (default: in a temporary directory)")
	fs.StringVar(&o.cluster, "cluster", "", "kubeconfig of an existing cluster to run the demo against, instead of an API server the demo starts itself")
	fs.StringVar(&o.metricsAddress, "metrics-address", "127.0.0.1:0", "address serving /metrics, /healthz and /debug/reconciliations (port 0 picks a free port)")
	fs.StringVar(&o.logLevel, "log-level", "info", "operator log level: debug, info, warn or error")
	fs.StringVar(&o.logFile, "log-file", "", "file for the operator's and API server's logs (default: in a temporary directory)")
	fs.StringVar(&o.image, "image", "nginxinc/nginx-unprivileged:1.27", "image of the WebApps (no pods run: the demo server has no kubelet)")
	fs.SetOutput(io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(stdout)
			fmt.Fprintln(stdout, "usage: demo [flags]\n\nRuns the WebApp operator against an API server it starts itself. Flags:")
			fs.PrintDefaults()
			return 0
		}
		return cli.Fail(stderr, cmdName, 2, err)
	}
	if fs.NArg() > 0 {
		return cli.Fail(stderr, cmdName, 2, fmt.Errorf("unexpected argument %q", fs.Arg(0)))
	}
	// Every bad value is found here, before the API server is built or
	// started: not minutes later, from the server or the operator.
	if err := o.validate(); err != nil {
		return cli.Fail(stderr, cmdName, 2, err)
	}

	dir, err := os.MkdirTemp("", "operatorkit-demo-")
	if err != nil {
		return cli.Fail(stderr, cmdName, 1, err)
	}
	if o.kubeconfig == "" {
		o.kubeconfig = filepath.Join(dir, "kubeconfig")
	}
	if o.logFile == "" {
		o.logFile = filepath.Join(dir, "operator.log")
	}
	d := &demo{opts: o, out: stdout, tty: isTerminal(stdout)}
	err = d.run(ctx)
	if err != nil {
		fmt.Fprintf(stdout, "\nresult: FAILED: %s\n", oneLine(err))
		// A run that failed before it logged anything (the API server's
		// build failed or was interrupted, a bad --cluster) has no logs
		// to keep, nor a directory.
		logged := hasData(o.logFile)
		if logged {
			fmt.Fprintf(stdout, "logs kept in %s\n", o.logFile)
		}
		if !logged || filepath.Dir(o.logFile) != dir {
			os.RemoveAll(dir)
		}
		return cli.Fail(stderr, cmdName, 1, err)
	}
	os.RemoveAll(dir)
	return 0
}

// hasData reports whether path is a file with something in it.
func hasData(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() > 0
}
