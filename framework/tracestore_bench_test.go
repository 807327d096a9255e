package framework

import (
	"fmt"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/trace"
)

// BenchmarkTraceStoreResync measures what the trace store costs a
// reconciliation that changed nothing (two crud resources in sync) when a
// resync goes through 1,000 objects, four times as many as the default
// store holds: making its trace, finishing it, and the store's add.
func BenchmarkTraceStoreResync(b *testing.B) {
	s := newTraceStore(DefaultTraceObjects, DefaultTracesPerObject)
	keys := make([]string, 1000)
	for i := range keys {
		keys[i] = fmt.Sprintf("ns/o%04d", i)
	}
	start := time.Unix(1000, 0)
	reconcile := func(key string) {
		tr := trace.NewSized(key, start, 32)
		for _, r := range []string{"configmap", "deployment"} {
			for _, st := range []string{crud.StepGetCurrentState, crud.StepGetDesiredState, crud.StepNewUpdatePatch} {
				tr.Record(r, st, start, trace.OutcomeDone, nil)
			}
			for _, st := range []string{crud.StepApplyCreateChange, crud.StepApplyUpdateChange, crud.StepApplyDeleteChange} {
				tr.RecordNotRun(r, st, trace.OutcomeSkipped)
			}
			tr.Record(r, resource.OperationEnsureCreated, start, trace.OutcomeDone, nil)
		}
		tr.Finish(ResultSuccess, 0, nil)
		if !s.add(key, tr) {
			tr.Release()
		}
	}
	for _, k := range keys {
		reconcile(k)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		reconcile(keys[i%len(keys)])
		i++
	}
}
