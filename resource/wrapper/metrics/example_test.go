package metrics_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/metrics"
)

// ExampleNew measures a crud resource whose update fails: after one
// EnsureCreated the registry counts an error for the step and for the
// operation, holds every other error counter at 0, and has timed each step
// that ran.
func ExampleNew() {
	update := crud.NewPatch()
	update.SetUpdateChange("replicas: 3")
	ops := &crudtest.Ops{
		Resource: "deployment",
		Patch:    update,
		Errors:   map[string][]error{crud.StepApplyUpdateChange: {apierrors.NewServiceUnavailable("etcd leader changed")}},
	}
	inner, err := crud.New(crud.Config{Ops: ops})
	if err != nil {
		panic(err)
	}
	reg := prometheus.NewRegistry() // in an operator, the registry its /metrics serves
	r, err := metrics.New(metrics.Config{Resource: inner, Registerer: reg})
	if err != nil {
		panic(err)
	}

	fmt.Println(r.EnsureCreated(context.Background(), nil))

	err = testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP operatorkit_resource_operation_errors_total Number of resource operations and CRUD steps that returned an error or panicked.
# TYPE operatorkit_resource_operation_errors_total counter
operatorkit_resource_operation_errors_total{operation="apply create change",resource="deployment"} 0
operatorkit_resource_operation_errors_total{operation="apply delete change",resource="deployment"} 0
operatorkit_resource_operation_errors_total{operation="apply update change",resource="deployment"} 1
operatorkit_resource_operation_errors_total{operation="ensure created",resource="deployment"} 1
operatorkit_resource_operation_errors_total{operation="ensure deleted",resource="deployment"} 0
operatorkit_resource_operation_errors_total{operation="get current state",resource="deployment"} 0
operatorkit_resource_operation_errors_total{operation="get desired state",resource="deployment"} 0
operatorkit_resource_operation_errors_total{operation="new delete patch",resource="deployment"} 0
operatorkit_resource_operation_errors_total{operation="new update patch",resource="deployment"} 0
`), "operatorkit_resource_operation_errors_total")
	if err != nil {
		fmt.Println(err) // the difference, line by line
	} else {
		fmt.Println("error counters as expected")
	}

	// The durations vary; how many were observed does not.
	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, f := range families {
		if f.GetName() != "operatorkit_resource_operation_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if n := m.GetHistogram().GetSampleCount(); n > 0 {
				// Labels come sorted by name: operation, resource.
				fmt.Printf("timed %q %d time(s)\n", m.GetLabel()[0].GetValue(), n)
			}
		}
	}
	// Output:
	// deployment: apply update change: etcd leader changed
	// error counters as expected
	// timed "apply update change" 1 time(s)
	// timed "ensure created" 1 time(s)
	// timed "get current state" 1 time(s)
	// timed "get desired state" 1 time(s)
	// timed "new update patch" 1 time(s)
}
