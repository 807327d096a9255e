//go:build unix

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// lockExcludes: lockFile keeps other processes out of the cache entry
// while one builds it.
const lockExcludes = true

// lockFile takes an exclusive flock on path, calling onWait once if another
// process holds it, and polls until it gets it or ctx is canceled. The lock
// goes with the process: one that dies mid-build frees it.
func lockFile(ctx context.Context, path string, onWait func()) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("testenv: open lock %s: %w", path, err)
	}
	waited := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("testenv: lock %s: %w", path, err)
		}
		if !waited {
			waited = true
			onWait()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("testenv: wait for lock %s: %w", path, context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}
