package operator

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// memLock is an in-memory resourcelock.Interface whose writes fail while
// failing is set.
type memLock struct {
	resourcelock.Interface // nil: only what renewedLock calls is here
	failing                bool
}

func (l *memLock) Create(context.Context, resourcelock.LeaderElectionRecord) error { return l.err() }
func (l *memLock) Update(context.Context, resourcelock.LeaderElectionRecord) error { return l.err() }
func (l *memLock) Identity() string                                                { return "me" }
func (l *memLock) err() error {
	if l.failing {
		return errors.New("unreachable")
	}
	return nil
}

// TestRenewedLockWatch: the Lease counts as lost RenewDeadline after the
// start of the last write that renewed it, and only then: a renewal moves
// the deadline, a failed one or a release (no holder) does not.
func TestRenewedLockWatch(t *testing.T) {
	const deadline = 2 * time.Second
	inner := &memLock{}
	l := &renewedLock{Interface: inner}
	me := resourcelock.LeaderElectionRecord{HolderIdentity: "me"}
	if err := l.Create(t.Context(), me); err != nil {
		t.Fatal(err)
	}
	created := *l.renewed.Load()
	lost := make(chan time.Time, 2)
	stop := l.watch(deadline, func() { lost <- time.Now() })
	defer stop()
	// A renewal a little later moves the deadline.
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return time.Since(created) > 100*time.Millisecond, nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := l.Update(t.Context(), me); err != nil {
		t.Fatal(err)
	}
	last := *l.renewed.Load()
	inner.failing = true
	_ = l.Update(t.Context(), me) // fails: not a renewal
	inner.failing = false
	_ = l.Update(t.Context(), resourcelock.LeaderElectionRecord{}) // a release: not a renewal
	if got := *l.renewed.Load(); !got.Equal(last) {
		t.Fatalf("a failed write or a release counted as a renewal")
	}
	var at time.Time
	if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		select {
		case at = <-lost:
			return true, nil
		default:
			return false, nil
		}
	}); err != nil {
		t.Fatal("not lost within 30 s of the last renewal")
	}
	if at.Before(last.Add(deadline)) {
		t.Errorf("lost %s after the last renewal, want at least %s", at.Sub(last), deadline)
	}
	stop()
	select {
	case <-lost:
		t.Error("lost reported twice")
	default:
	}
}
