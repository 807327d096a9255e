package trace_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/trace"
)

// newResource returns a crud resource named name over a crudtest.Ops with
// the given patch and step errors.
func newResource(name string, patch *crud.Patch, errs map[string][]error) resource.Interface {
	r, err := crud.New(crud.Config{Ops: &crudtest.Ops{Resource: name, Patch: patch, Errors: errs}})
	if err != nil {
		panic(err)
	}
	return r
}

// printSteps prints the steps of t without their times, which vary.
func printSteps(t *trace.Trace) {
	for _, s := range t.Snapshot().Steps {
		line := fmt.Sprintf("%s: %s: %s", s.Resource, s.Step, s.Outcome)
		if s.Error != "" {
			line += " (" + s.Error + ")"
		}
		fmt.Println(line)
	}
}

// A reconciliation run with a Trace in its context records every CRUD
// step of its resources; the caller finishes the Trace with the outcome.
// A Framework does this for every reconciliation, with the ensure steps too.
func Example() {
	update := crud.NewPatch()
	update.SetUpdateChange("data: v2")
	chain := []resource.Interface{
		newResource("configmap", update, nil),
		newResource("dns-record", nil, map[string][]error{crud.StepGetCurrentState: {errors.New("zone not found")}}),
	}

	t := trace.New("shop/web", time.Now())
	t.ResourceSet = "v1"
	ctx := trace.NewContext(context.Background(), t)
	var err error
	for _, r := range chain {
		if err = r.EnsureCreated(ctx, nil); err != nil {
			break
		}
	}
	t.Finish("error", 0, err)

	printSteps(t)
	fmt.Println("result:", t.Result, "/", t.Error)
	// Output:
	// configmap: get current state: done
	// configmap: get desired state: done
	// configmap: new update patch: done
	// configmap: apply create change: skipped
	// configmap: apply update change: done
	// configmap: apply delete change: skipped
	// dns-record: get current state: error (zone not found)
	// result: error / dns-record: get current state: zone not found
}

// A resource that is not a crud.Resource records its own steps. Without a
// Trace in the context it reads no clock (Trace.Now of a nil Trace is the
// zero time) and Record does nothing.
func ExampleRecord() {
	updateListeners := func(context.Context) error { return nil } // the load balancer's API
	ensureListeners := func(ctx context.Context) error {
		start := trace.FromContext(ctx).Now()
		err := updateListeners(ctx)
		outcome := trace.OutcomeDone
		if err != nil {
			outcome = trace.OutcomeError
		}
		trace.Record(ctx, "load-balancer", "update listeners", start, outcome, err)
		return err
	}

	_ = ensureListeners(context.Background()) // not traced: nothing recorded
	t := trace.New("shop/web", time.Now())
	_ = ensureListeners(trace.NewContext(context.Background(), t))
	printSteps(t)
	// Output:
	// load-balancer: update listeners: done
}

// A store of traces folds a reconciliation that went the same way as the
// one before into it, so that a run of no-op resyncs takes one place;
// Reconciliations still counts each of them.
func ExampleTrace_Fold() {
	r := newResource("configmap", nil, nil) // a nil patch: nothing to do
	reconcile := func() *trace.Trace {
		t := trace.New("shop/web", time.Now())
		err := r.EnsureCreated(trace.NewContext(context.Background(), t), nil)
		t.Finish("success", 0, err)
		return t
	}

	kept := reconcile()
	for range 3 {
		if newer := reconcile(); !kept.Fold(newer) {
			fmt.Println("went another way: keep both")
		}
	}
	traces := []trace.Trace{kept.Snapshot()}
	fmt.Println("traces:", len(traces), "repeats:", kept.Repeats, "reconciliations:", trace.Reconciliations(traces))
	// Output:
	// traces: 1 repeats: 3 reconciliations: 4
}
