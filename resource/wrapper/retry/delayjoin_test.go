package retry_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// TestDelayOfJoinedErrors: an error that joins several failures (two calls
// made side by side, errors.Join or fmt.Errorf with two %w) asks for the
// longest wait any of them asks for, whichever comes first in the join: a
// retry after the shorter one calls an API sooner than it asked.
func TestDelayOfJoinedErrors(t *testing.T) {
	short := retry.After(errors.New("dns: 429"), time.Second)
	long := retry.After(errors.New("cdn: 429"), time.Hour)
	api := apierrors.NewTooManyRequests("slow down", 30)
	for _, tt := range []struct {
		name string
		err  error
		want time.Duration
		ok   bool
	}{
		{"Join(short, long)", errors.Join(short, long), time.Hour, true},
		{"Join(long, short)", errors.Join(long, short), time.Hour, true},
		{"Join(short, 429 of 30s)", errors.Join(short, api), 30 * time.Second, true},
		{"wrapped Join(plain, long, short)", fmt.Errorf("sync: %w", errors.Join(errors.New("plain"), long, short)), time.Hour, true},
		{"two %w", fmt.Errorf("%w; %w", short, long), time.Hour, true},
		{"Join(plain, plain)", errors.Join(errors.New("a"), errors.New("b")), 0, false},
		{"After of a Join", retry.After(errors.Join(short, long), time.Minute), time.Minute, true},
	} {
		if d, ok := retry.DelayOf(tt.err); d != tt.want || ok != tt.ok {
			t.Errorf("%s: DelayOf = %s, %t; want %s, %t", tt.name, d, ok, tt.want, tt.ok)
		}
	}
}
