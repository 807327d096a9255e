package framework_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/trace"
)

func nopResources(b *testing.B, n int) []resource.Interface {
	b.Helper()
	var rs []resource.Interface
	for i := range n {
		r, err := crud.New(crud.Config{Ops: crudtest.Nop(fmt.Sprintf("r%d", i))})
		if err != nil {
			b.Fatal(err)
		}
		rs = append(rs, r)
	}
	return rs
}

// BenchmarkProcessUpdate measures the framework's own cost: one
// reconciliation over 5 crud resources whose Ops do nothing (nil states, nil
// patch), without a trace. Each resource runs its 3 read steps, 2 cancel
// checks per step and 3 skipped apply steps.
func BenchmarkProcessUpdate(b *testing.B) {
	rs := nopResources(b, 5)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := framework.ProcessUpdate(ctx, nil, rs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProcessUpdateTraced is BenchmarkProcessUpdate with a trace
// recording every step (35 steps per run).
func BenchmarkProcessUpdateTraced(b *testing.B) {
	rs := nopResources(b, 5)
	b.ReportAllocs()
	for b.Loop() {
		ctx := trace.NewContext(context.Background(), &trace.Trace{Steps: make([]trace.Step, 0, 64)})
		if err := framework.ProcessUpdate(ctx, nil, rs); err != nil {
			b.Fatal(err)
		}
	}
}
