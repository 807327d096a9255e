package testenv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The cache directory keeps one entry per server program built (about
// 120 MB each), and every Kubernetes bump or Go upgrade builds a new one.
// It is pruned as Go's build cache is: a use of an entry marks it used, at
// most once an hour so that a use writes nothing most of the time, and
// entries not used for PruneAfter are removed, by a build of a new entry
// and by a use at most once a day.
const (
	// PruneAfter is how long an entry of the cache directory (see
	// EnvCacheDir) may go unused before Build removes it: a week, so that
	// a branch or release tested weekly on an older Kubernetes or Go
	// version keeps its program; a longer pause costs one build again.
	PruneAfter = 7 * 24 * time.Hour
	// usedInterval is how stale an entry's used marker may get before a
	// use refreshes it.
	usedInterval = time.Hour
	// pruneInterval is how often a use of an entry prunes the others.
	pruneInterval = 24 * time.Hour
	// usedMarker, in an entry, was last modified when the entry was last
	// used (give or take usedInterval).
	usedMarker = "used"
	// prunedMarker, in the cache directory, was last modified when the
	// cache was last pruned.
	prunedMarker = "pruned"
)

// entryName matches the names cacheKey makes ("go1.26.8-14b18b0694268a6f";
// "devel-..." with a development toolchain): pruneCache removes nothing
// else.
var entryName = regexp.MustCompile(`^(go1\.[0-9A-Za-z._+-]+|devel)-[0-9a-f]{16}$`)

// markUsed marks entry used at now, unless its marker says it was less
// than usedInterval ago. It cannot fail: a cache it cannot write (read-only)
// is used all the same, only never pruned.
func markUsed(entry string, now time.Time) {
	marker := filepath.Join(entry, usedMarker)
	if fi, err := os.Lstat(marker); err == nil && now.Sub(fi.ModTime()) < usedInterval {
		return
	}
	touch(marker, now)
}

// useEntry marks entry used at now for a Build that found its program bin
// there, and reports whether bin is still there to be run: false when
// another process pruned the entry meanwhile. A pruning removes an entry
// under its lock after a last look at its marker; a marker older than
// usedInterval is therefore refreshed under that lock too, after a last
// look at bin, so that the pruning either finds the entry used or has
// removed it before Build returns its program. A fresh marker needs
// neither the lock nor a write: no pruning removes the entry for
// PruneAfter. A lock that cannot be taken (a read-only cache, which is
// not pruned) leaves the entry as it is, used all the same.
func useEntry(ctx context.Context, entry, bin string, now time.Time, progress io.Writer) bool {
	if fi, err := os.Lstat(filepath.Join(entry, usedMarker)); err == nil && now.Sub(fi.ModTime()) < usedInterval {
		return true
	}
	// Bounded as the build's own wait for the lock is (see build); a
	// pruning holds it for the removal of one entry.
	lctx, stopLock := buildContext(ctx)
	unlock, err := lockFile(lctx, entry+".lock", func() {
		fmt.Fprintf(progress, "testenv: waiting for the lock of %s, which another process holds (building or pruning it)\n", entry)
	})
	stopLock()
	if err != nil {
		// A read-only cache, a file system without flock: neither is
		// pruned (pruneCache locks each entry first). Or ctx canceled,
		// which the caller finds out.
		markUsed(entry, now)
		return executable(bin)
	}
	defer unlock()
	if !executable(bin) {
		return false
	}
	markUsed(entry, now)
	return true
}

// maybePrune prunes root, the cache directory, unless it was pruned less
// than pruneInterval ago (see pruneCache).
func maybePrune(root, current string, now time.Time) {
	if !lockExcludes {
		return
	}
	if fi, err := os.Lstat(filepath.Join(root, prunedMarker)); err == nil && now.Sub(fi.ModTime()) < pruneInterval {
		return
	}
	pruneCache(root, current, now)
}

// pruneCache records in root, the cache directory, that it is pruned at
// now, and removes root's entries other than current (a cache key) that
// were not used for PruneAfter, each with its lock file. It skips an
// entry that another process builds (holds its lock), any name cacheKey
// does not make, and anything but directories (a symbolic link is not
// followed, nor removed). Where lockFile does not exclude other processes
// it removes nothing (whether an entry is being built is not known), and
// nothing either when it cannot record the pruning (a read-only cache: it
// would try on every use).
func pruneCache(root, current string, now time.Time) {
	if !lockExcludes || !touch(filepath.Join(root, prunedMarker), now) {
		return
	}
	des, err := os.ReadDir(root)
	if err != nil {
		return
	}
	keys := map[string]bool{}
	for _, d := range des {
		key, isLock := strings.CutSuffix(d.Name(), ".lock")
		if key == current || !entryName.MatchString(key) {
			continue
		}
		// An entry, or the lock file of one whose directory is gone (a
		// prune interrupted between the two).
		if isLock && d.Type().IsRegular() || !isLock && d.IsDir() {
			keys[key] = true
		}
	}
	for key := range keys {
		entry := filepath.Join(root, key)
		if now.Sub(lastUsed(entry)) < PruneAfter {
			continue
		}
		unlock, ok := tryLockFile(entry + ".lock")
		if !ok {
			continue // being built
		}
		// Looked at again under the lock: built or used since.
		fi, err := os.Lstat(entry)
		if now.Sub(lastUsed(entry)) >= PruneAfter && (errors.Is(err, fs.ErrNotExist) || err == nil && fi.IsDir()) {
			// The directory first: a lock file without its entry is
			// pruned next time, an entry without its lock file is not.
			if os.RemoveAll(entry) == nil {
				_ = os.Remove(entry + ".lock")
			}
		}
		unlock()
	}
}

// lastUsed is when entry was last used, as far as the cache tells: the
// latest modification of its used marker, its program, the entry itself
// and its lock file (an entry from before the markers has none, and was
// last used no earlier than it was built). Zero when there is none of
// them.
func lastUsed(entry string) time.Time {
	var last time.Time
	for _, p := range []string{filepath.Join(entry, usedMarker), filepath.Join(entry, "apiserver"), entry, entry + ".lock"} {
		if fi, err := os.Lstat(p); err == nil && fi.ModTime().After(last) {
			last = fi.ModTime()
		}
	}
	return last
}

// touch sets the modification time of the regular file at path to now,
// creating it empty if it is missing, and reports whether it did. It does
// not follow a symbolic link at path.
func touch(path string, now time.Time) bool {
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return false
		}
		f.Close()
	case err != nil || !fi.Mode().IsRegular():
		return false
	}
	return os.Chtimes(path, now, now) == nil
}
