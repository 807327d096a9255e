//go:build unix

package testenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// lockExcludes: lockFile keeps other processes out of the cache entry
// while one builds it.
const lockExcludes = true

// lockFile takes an exclusive flock on path, calling onWait once if another
// process holds it, and polls until it gets it or ctx is canceled. The lock
// goes with the process: one that dies mid-build frees it. A lock file
// removed while this process waited for it (pruneCache removes an entry's)
// locks nothing any more: lockFile then locks the file at path again. A
// path that cannot be opened (or created) is os.OpenFile's *fs.PathError.
func lockFile(ctx context.Context, path string, onWait func()) (unlock func(), err error) {
	waited := false
	for {
		unlock, busy, err := lockOnce(path)
		if !busy {
			return unlock, err
		}
		if !waited {
			waited = true
			onWait()
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("testenv: wait for lock %s: %w", path, context.Cause(ctx))
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// tryLockFile takes an exclusive flock on path (creating the file if it is
// missing) if no other process holds it, without waiting: ok is false when
// one does, or when path cannot be opened or locked.
func tryLockFile(path string) (unlock func(), ok bool) {
	unlock, _, _ = lockOnce(path)
	return unlock, unlock != nil
}

// lockOnce takes an exclusive flock on path, creating the file if it is
// missing, unless another process holds it (busy). A file removed (and
// maybe created anew) by another process while it was being locked locks
// nothing: lockOnce locks the file at path again. err is os.OpenFile's
// *fs.PathError when path cannot be opened, or flock's error.
func lockOnce(path string) (unlock func(), busy bool, err error) {
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, false, err // an *fs.PathError naming path
		}
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		switch {
		case err == nil && lockedAt(f, path):
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, false, nil
		case err == nil: // removed meanwhile: lock the file at path
			f.Close()
		case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EINTR):
			f.Close()
			return nil, true, nil
		default:
			f.Close()
			return nil, false, fmt.Errorf("testenv: lock %s: %w", path, err)
		}
	}
}

// lockedAt reports whether f, locked, is still the file at path: another
// process may have removed it (and another created a new one) before f's
// lock was taken.
func lockedAt(f *os.File, path string) bool {
	held, err := f.Stat()
	if err != nil {
		return false
	}
	at, err := os.Stat(path)
	return err == nil && os.SameFile(held, at)
}

// lockDir marks dir, an Env's directory, as in use by this process until
// unlock: an flock on dir/.lock. The file is locked under another name and
// then renamed, so that removeStaleDirs never finds a .lock that its live
// process has not locked yet.
func lockDir(dir string) (unlock func(), err error) {
	tmp := filepath.Join(dir, ".lock.tmp")
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("testenv: lock %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("testenv: lock %s: %w", dir, err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, ".lock")); err != nil {
		f.Close()
		return nil, fmt.Errorf("testenv: lock %s: %w", dir, err)
	}
	ownDirs.Store(dir, true)
	return func() { ownDirs.Delete(dir); f.Close() }, nil
}

// ownDirs holds the directories this process locked, which
// removeStaleDirs does not even open: where flock is emulated with POSIX
// locks (NFS), a process's own locks do not exclude it, and closing any
// descriptor of the file drops them.
var ownDirs sync.Map

// removeStaleDirs removes the directories of Envs in parent whose process
// died without removing them and took its server along (both killed at
// once: a kill of the whole process tree, the OOM killer): etcd's data,
// about 120 MB each. Such a directory's .lock is not locked any more;
// directories without one (not lockDir's) are left alone.
func removeStaleDirs(parent string) {
	if parent == "" {
		parent = os.TempDir()
	}
	locks, _ := filepath.Glob(filepath.Join(parent, "testenv-*", ".lock"))
	for _, lock := range locks {
		if _, own := ownDirs.Load(filepath.Dir(lock)); own {
			continue
		}
		f, err := os.Open(lock)
		if err != nil {
			continue
		}
		if syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			_ = os.RemoveAll(filepath.Dir(lock))
		}
		f.Close()
	}
}
