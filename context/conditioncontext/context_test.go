package conditioncontext

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cenkalti/backoff/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestWithoutConditions(t *testing.T) {
	ctx := context.Background()
	Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Ready", "") // no signal: ignored, no panic
	if _, ok := Get(ctx, "DatabaseReady"); ok {
		t.Error("Get on a plain context = true")
	}
	if got := List(ctx); got != nil {
		t.Errorf("List on a plain context = %v, want nil", got)
	}
	ran := false
	err := Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
		ran = true
		return metav1.ConditionTrue, "", "", nil
	})
	if !errors.Is(err, ErrNoConditions) || !isPermanent(err) || ran {
		t.Errorf("Guard on a plain context = %v (ran %v), want a permanent ErrNoConditions and no task", err, ran)
	}
}

func isPermanent(err error) bool {
	var p *backoff.PermanentError
	return errors.As(err, &p)
}

func TestSetGetList(t *testing.T) {
	current := []metav1.Condition{{Type: "DatabaseReady", Status: metav1.ConditionFalse, Reason: "Old"}, {Type: "Ready", Status: metav1.ConditionTrue, Reason: "Fine"}}
	ctx := NewGuardedContext(context.Background(), current, nil)
	if c, ok := Get(ctx, "DatabaseReady"); !ok || c.Reason != "Old" {
		t.Errorf("Get before Set = %+v, %v; want the object's condition", c, ok)
	}
	Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Provisioned", "db-1")
	Set(ctx, "CacheReady", metav1.ConditionFalse, "Pending", "")
	Set(ctx, "DatabaseReady", metav1.ConditionTrue, "Provisioned", "db-2") // replaces, keeps its place
	if c, ok := Get(ctx, "DatabaseReady"); !ok || c.Message != "db-2" {
		t.Errorf("Get after Set = %+v, %v; want the last Set", c, ok)
	}
	if c, ok := Get(ctx, "Ready"); !ok || c.Reason != "Fine" {
		t.Errorf("Get of a type not set = %+v, %v; want the object's", c, ok)
	}
	var types []string
	for _, c := range List(ctx) {
		types = append(types, c.Type+"/"+c.Message)
	}
	if want := []string{"DatabaseReady/db-2", "CacheReady/"}; !slices.Equal(types, want) {
		t.Errorf("List() = %q, want %q", types, want)
	}
}

func TestConcurrentSet(t *testing.T) {
	ctx := NewContext(context.Background())
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() {
			Set(ctx, fmt.Sprintf("Type%d", i%5), metav1.ConditionTrue, "R", fmt.Sprint(i))
			Get(ctx, "Type0")
			List(ctx)
		})
	}
	wg.Wait()
	if n := len(List(ctx)); n != 5 {
		t.Fatalf("List() has %d conditions, want 5", n)
	}
}

func TestGuard(t *testing.T) {
	conflict := apierrors.NewConflict(schema.GroupResource{Resource: "things"}, "a", errors.New("the object has been modified"))
	tests := []struct {
		name       string
		condition  string
		reason     string
		lockErr    error
		task       Task
		wantErr    func(error) bool
		wantRun    bool
		wantLocked bool
		want       *metav1.Condition
	}{{
		name: "success", condition: "DatabaseReady", reason: "Creating",
		task: func(context.Context) (metav1.ConditionStatus, string, string, error) {
			return metav1.ConditionTrue, "Created", "db-1", nil
		},
		wantErr: func(err error) bool { return err == nil }, wantRun: true, wantLocked: true,
		want: &metav1.Condition{Type: "DatabaseReady", Status: metav1.ConditionTrue, Reason: "Created", Message: "db-1"},
	}, {
		name: "defaults on success", condition: "DatabaseReady", reason: "Creating",
		task:    func(context.Context) (metav1.ConditionStatus, string, string, error) { return "", "", "", nil },
		wantErr: func(err error) bool { return err == nil }, wantRun: true, wantLocked: true,
		want: &metav1.Condition{Type: "DatabaseReady", Status: metav1.ConditionTrue, Reason: "Creating"},
	}, {
		name: "defaults on error", condition: "DatabaseReady", reason: "Creating",
		task: func(context.Context) (metav1.ConditionStatus, string, string, error) {
			return "", "", "", errors.New("timeout")
		},
		wantErr: func(err error) bool {
			return err != nil && err.Error() == "guarded change of condition DatabaseReady: timeout"
		},
		wantRun: true, wantLocked: true,
		want: &metav1.Condition{Type: "DatabaseReady", Status: metav1.ConditionUnknown, Reason: "CreatingFailed", Message: "timeout"},
	}, {
		name: "conflict", condition: "DatabaseReady", reason: "Creating", lockErr: conflict,
		wantErr: func(err error) bool { return apierrors.IsConflict(err) && !isPermanent(err) }, wantLocked: true,
	}, {
		name: "invalid type", condition: "not a name!", reason: "Creating",
		wantErr: func(err error) bool { return errors.Is(err, ErrInvalidCondition) && isPermanent(err) },
	}, {
		name: "invalid reason", condition: "DatabaseReady", reason: "in progress",
		wantErr: func(err error) bool { return errors.Is(err, ErrInvalidCondition) && isPermanent(err) },
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var locked []metav1.Condition
			lock := func(_ context.Context, c metav1.Condition) error {
				locked = append(locked, c)
				return tt.lockErr
			}
			ctx := NewGuardedContext(context.Background(), nil, lock)
			ran := false
			task := tt.task
			if task == nil {
				task = func(context.Context) (metav1.ConditionStatus, string, string, error) {
					return metav1.ConditionTrue, "", "", nil
				}
			}
			err := Guard(ctx, tt.condition, tt.reason, func(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
				ran = true
				if c, ok := Get(ctx, tt.condition); !ok || c.Status != metav1.ConditionUnknown || c.Message != LockMessage {
					t.Errorf("Get while the task runs = %+v, %v; want the lock", c, ok)
				}
				return task(ctx)
			})
			if !tt.wantErr(err) {
				t.Errorf("Guard() = %v", err)
			}
			if ran != tt.wantRun {
				t.Errorf("task ran = %v, want %v", ran, tt.wantRun)
			}
			wantLock := metav1.Condition{Type: tt.condition, Status: metav1.ConditionUnknown, Reason: tt.reason, Message: LockMessage}
			if tt.wantLocked != (len(locked) == 1 && locked[0] == wantLock) {
				t.Errorf("locks = %+v, want locked %v", locked, tt.wantLocked)
			}
			got, ok := Get(ctx, tt.condition)
			set := List(ctx)
			switch {
			case tt.want == nil && len(set) > 0:
				t.Errorf("List() = %+v, want nothing set", set)
			case tt.want != nil && (!ok || got != *tt.want):
				t.Errorf("condition after Guard = %+v, want %+v", got, *tt.want)
			}
		})
	}
}

func TestGuardWithoutLock(t *testing.T) {
	ctx := NewContext(context.Background())
	err := Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
		return metav1.ConditionTrue, "Created", "", nil
	})
	if c, ok := Get(ctx, "DatabaseReady"); err != nil || !ok || c.Reason != "Created" {
		t.Fatalf("Guard() = %v, condition %+v; want the outcome recorded", err, c)
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		c     metav1.Condition
		valid bool
	}{
		{metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "Fine"}, true},
		{metav1.Condition{Type: "example.com/DatabaseReady", Status: metav1.ConditionFalse, Reason: "A_b,c:d"}, true},
		{metav1.Condition{Type: "", Status: metav1.ConditionTrue, Reason: "Fine"}, false},
		{metav1.Condition{Type: "Ready", Status: "Yes", Reason: "Fine"}, false},
		{metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: ""}, false},
		{metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Reason: "1Fine"}, false},
	}
	for _, tt := range tests {
		if err := Validate(tt.c); (err == nil) != tt.valid || (err != nil && !errors.Is(err, ErrInvalidCondition)) {
			t.Errorf("Validate(%+v) = %v, want valid %v", tt.c, err, tt.valid)
		}
	}
}

func TestWithReason(t *testing.T) {
	base := errors.New("image is not valid")
	err := fmt.Errorf("configmap: %w", backoff.Permanent(WithReason(base, "InvalidSpec")))
	if reason, ok := ReasonOf(err); !ok || reason != "InvalidSpec" {
		t.Fatalf("ReasonOf = %q, %v; want InvalidSpec", reason, ok)
	}
	if !errors.Is(err, base) {
		t.Error("the annotated error does not wrap its cause")
	}
	if err.Error() != "configmap: image is not valid" {
		t.Errorf("message = %q, want the cause's alone", err.Error())
	}
	if _, ok := ReasonOf(base); ok {
		t.Error("ReasonOf found a reason in a plain error")
	}
	if WithReason(nil, "X") != nil {
		t.Error("WithReason(nil) is not nil")
	}
}

func TestGuardLeavesTheCallersConditions(t *testing.T) {
	current := []metav1.Condition{{Type: "DatabaseReady", Status: metav1.ConditionFalse, Reason: "Old"}}
	ctx := NewGuardedContext(context.Background(), current, func(context.Context, metav1.Condition) error { return nil })
	err := Guard(ctx, "DatabaseReady", "Creating", func(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
		if c, _ := Get(ctx, "DatabaseReady"); c.Reason != "Creating" {
			t.Errorf("condition while the task runs = %+v, want the lock", c)
		}
		return "", "", "", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if current[0].Reason != "Old" {
		t.Errorf("the lock modified the caller's slice: %+v", current[0])
	}
}

// TestGuardWithNilLockFunc: a guarded context made with a nil LockFunc runs
// the task without a lock (and does not call the nil func).
func TestGuardWithNilLockFunc(t *testing.T) {
	ctx := NewGuardedContext(context.Background(), nil, nil)
	ran := false
	err := Guard(ctx, "DatabaseReady", "Provisioning", func(context.Context) (metav1.ConditionStatus, string, string, error) {
		ran = true
		return "", "", "", nil
	})
	if err != nil || !ran {
		t.Fatalf("Guard = %v, task ran %v; want nil, true", err, ran)
	}
	if c, ok := Get(ctx, "DatabaseReady"); !ok || c.Status != metav1.ConditionTrue || c.Reason != "Provisioning" {
		t.Errorf("condition after Guard = %+v, %v", c, ok)
	}
}

// TestGuardTaskPanics: a task that panics records its outcome as Unknown
// (the change may or may not have happened) before the panic goes on, so
// that the lock does not outlive the reconciliation.
func TestGuardTaskPanics(t *testing.T) {
	ctx := NewGuardedContext(context.Background(), nil, func(context.Context, metav1.Condition) error { return nil })
	func() {
		defer func() {
			if v := recover(); v != "cloud SDK: nil map" {
				t.Errorf("recovered %v, want the task's panic to go on", v)
			}
		}()
		_ = Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			panic("cloud SDK: nil map")
		})
	}()
	want := metav1.Condition{Type: "DatabaseReady", Status: metav1.ConditionUnknown, Reason: "CreatingFailed", Message: "panic: cloud SDK: nil map"}
	if got, ok := Get(ctx, "DatabaseReady"); !ok || got != want {
		t.Errorf("condition after the panic = %+v, want %+v", got, want)
	}
}

// TestGuardsOfOneConditionTakeTurns: a Guard of a condition that another
// Guard of this reconciliation runs waits for its turn; both locked and ran
// their tasks at once (the second took the first's lock for its own).
func TestGuardsOfOneConditionTakeTurns(t *testing.T) {
	locks := 0
	ctx := NewGuardedContext(context.Background(), nil, func(context.Context, metav1.Condition) error { locks++; return nil })
	innerRan := false
	err := Guard(ctx, "DatabaseReady", "Creating", func(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
		// A second Guard while this one runs, with a context that ended:
		// it must not get its turn.
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		err := Guard(canceled, "DatabaseReady", "Resizing", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			innerRan = true
			return "", "", "", nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Errorf("second Guard = %v, want it to wait for its turn until its context ended", err)
		}
		return "", "", "", nil
	})
	if err != nil || innerRan || locks != 1 {
		t.Errorf("Guard() = %v, second task ran %v, locks %d; want nil, false, 1", err, innerRan, locks)
	}
	// The turn is free again.
	if err := Guard(ctx, "DatabaseReady", "Resizing", func(context.Context) (metav1.ConditionStatus, string, string, error) { return "", "", "", nil }); err != nil || locks != 2 {
		t.Errorf("Guard after the first = %v, locks %d; want nil, 2", err, locks)
	}
}

// TestGuardErrorOfUnknownOutcome: a task that fails without a status (the
// change may have happened) makes Guard's error match ErrOutcomeUnknown,
// with the task's message and error chain, not marked permanent; one that
// reports False (nothing happened) does not.
func TestGuardErrorOfUnknownOutcome(t *testing.T) {
	timeout := errors.New("timeout")
	for _, tt := range []struct {
		status metav1.ConditionStatus
		want   bool
	}{{"", true}, {metav1.ConditionUnknown, true}, {metav1.ConditionFalse, false}} {
		ctx := NewGuardedContext(context.Background(), nil, func(context.Context, metav1.Condition) error { return nil })
		err := Guard(ctx, "DatabaseReady", "Creating", func(context.Context) (metav1.ConditionStatus, string, string, error) {
			return tt.status, "", "", timeout
		})
		if got := errors.Is(err, ErrOutcomeUnknown); got != tt.want || !errors.Is(err, timeout) || isPermanent(err) {
			t.Errorf("status %q: Guard() = %v, matches ErrOutcomeUnknown %v, want %v (and the task's error, not permanent)", tt.status, err, got, tt.want)
		}
		if err.Error() != "guarded change of condition DatabaseReady: timeout" {
			t.Errorf("status %q: message %q", tt.status, err.Error())
		}
	}
}
