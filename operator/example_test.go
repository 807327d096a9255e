package operator_test

import (
	"flag"
	"fmt"

	"github.com/operatorkit/operatorkit/operator"
)

// An operator binary binds the usual flags, validates them (one line per
// bad value) and turns them into the Operator's Config.
func ExampleOptions() {
	opts := operator.Options{LeaderElectionID: "webapp-operator"}
	fs := flag.NewFlagSet("webapp-operator", flag.ContinueOnError)
	opts.BindFlags(fs)
	_ = fs.Parse([]string{"--log-format", "yaml", "--kube-api-qps", "0", "--metrics-bind-address", "127.0.0.1:9090"})
	fmt.Println(opts.Validate())

	_ = fs.Parse([]string{"--log-format", "json", "--kube-api-qps", "20"})
	fmt.Println(opts.Validate())
	cfg := opts.Config("webapp-operator", nil, nil)
	fmt.Println(cfg.MetricsAddress, cfg.HealthProbeAddress, cfg.LeaderElection, cfg.LeaderElectionID)
	// Output:
	// invalid value "yaml" for flag --log-format: want logfmt or json
	// invalid value 0 for flag --kube-api-qps: must be positive
	// <nil>
	// 127.0.0.1:9090 :8081 true webapp-operator
}
