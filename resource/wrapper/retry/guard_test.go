package retry_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// TestGuardedChangeOfUnknownOutcomeNotRetried: a crud resource creates
// something outside Kubernetes under a conditioncontext.Guard, and the
// create fails in a way that leaves its outcome unknown (a 5xx answer after
// the external system created it). Retrying the step in place would run the
// task again without finding out first, and create it twice: the retry
// wrapper returns the error after one call, unmarked (the Framework retries
// the object with backoff). A task that reports that nothing happened
// (status False) is retried as any other error.
func TestGuardedChangeOfUnknownOutcomeNotRetried(t *testing.T) {
	errCreate := errors.New("503 after the create")
	tests := []struct {
		name        string
		status      metav1.ConditionStatus
		wantCreates int64
		wantUnknown bool
	}{
		{name: "outcome unknown", status: "", wantCreates: 1, wantUnknown: true},
		{name: "nothing happened", status: metav1.ConditionFalse, wantCreates: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var creates atomic.Int64
			p := crud.NewPatch()
			p.SetCreateChange("database")
			c, err := crud.New(crud.Config{Ops: &guardedOps{Ops: &crudtest.Ops{Resource: "database", Patch: p},
				task: func(context.Context) (metav1.ConditionStatus, string, string, error) {
					creates.Add(1)
					return tt.status, "", "", errCreate
				}}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := retry.New(retry.Config{Resource: c, BackOffFactory: zeroRetries(3)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := conditioncontext.NewGuardedContext(context.Background(), nil, func(context.Context, metav1.Condition) error { return nil })
			err = r.EnsureCreated(ctx, nil)
			if !errors.Is(err, errCreate) || retry.IsPermanent(err) {
				t.Fatalf("EnsureCreated = %v, want the create's error, not permanent", err)
			}
			if got := errors.Is(err, conditioncontext.ErrOutcomeUnknown); got != tt.wantUnknown {
				t.Errorf("error matches ErrOutcomeUnknown = %v, want %v", got, tt.wantUnknown)
			}
			if n := creates.Load(); n != tt.wantCreates {
				t.Errorf("creates = %d, want %d", n, tt.wantCreates)
			}
		})
	}
}

// guardedOps is an Ops whose ApplyCreateChange runs task under a Guard.
type guardedOps struct {
	*crudtest.Ops
	task conditioncontext.Task
}

func (o *guardedOps) ApplyCreateChange(ctx context.Context, _, _ any) error {
	return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", o.task)
}
