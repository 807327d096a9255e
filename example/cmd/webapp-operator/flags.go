package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// commonFlags are the flags of both the operator and the plan subcommand.
type commonFlags struct {
	kubeconfig string
	namespace  string
	logLevel   string
	qps        float64
	burst      int
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "path of a kubeconfig file (default: $KUBECONFIG, else in-cluster, else ~/.kube/config)")
	fs.StringVar(&c.namespace, "namespace", "", "namespace of the WebApps to reconcile (default: all namespaces)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Float64Var(&c.qps, "kube-api-qps", 50, "requests per second to the API server (client-side limit)")
	fs.IntVar(&c.burst, "kube-api-burst", 100, "burst of requests to the API server (client-side limit)")
}

func (c *commonFlags) validate() error {
	if c.qps <= 0 {
		return fmt.Errorf("invalid value %v for flag -kube-api-qps: must be positive", c.qps)
	}
	if c.burst <= 0 {
		return fmt.Errorf("invalid value %d for flag -kube-api-burst: must be positive", c.burst)
	}
	return nil
}

// errHelp is returned by parse for -h and --help, after printing the usage.
var errHelp = flag.ErrHelp

// parse parses args into fs. Errors are returned as one line, without the
// flag package's usage dump; -h prints the usage to stdout and returns
// errHelp.
func parse(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(stdout)
		fmt.Fprintln(stdout, usage)
		fs.PrintDefaults()
		return errHelp
	}
	return err
}
