//go:build unix

package testenv

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// The names of the markers in the cache (usedMarker, prunedMarker),
// spelled out: the tests check the files a user finds there.
const (
	testUsedMarker   = "used"
	testPrunedMarker = "pruned"
)

// days is n days before now.
func days(n float64) time.Time {
	return time.Now().Add(-time.Duration(n * float64(24*time.Hour)))
}

// chtimes sets the modification time of path (not following a symbolic
// link at path's end) to at.
func chtimes(t *testing.T, path string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

// fakeEntry makes a cache entry as Build leaves it, without building:
// root/key with a program and its source, and root/key.lock, all last
// modified at built. used, unless zero, is the time of its used marker
// (zero: an entry from before the markers).
func fakeEntry(t *testing.T, root, key string, built, used time.Time) string {
	t.Helper()
	entry := filepath.Join(root, key)
	if err := os.MkdirAll(filepath.Join(entry, "src"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileMode{"apiserver": 0o755, "src/main.go": 0o644}
	for name, mode := range files {
		if err := os.WriteFile(filepath.Join(entry, name), []byte("#!/bin/sh\necho fake\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(entry+".lock", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if !used.IsZero() {
		if err := os.WriteFile(filepath.Join(entry, testUsedMarker), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		chtimes(t, filepath.Join(entry, testUsedMarker), used)
	}
	for _, p := range []string{"apiserver", "src/main.go", "src", ""} {
		chtimes(t, filepath.Join(entry, p), built)
	}
	chtimes(t, entry+".lock", built)
	return entry
}

// hitCache makes a cache directory (EnvCacheDir) for tinySource, with the
// entry Build finds for it (the current one) built days ago, so that
// Build hits it and builds nothing. It returns the cache directory and
// the current entry.
func hitCache(t *testing.T) (root, current string) {
	t.Helper()
	t.Setenv(EnvAPIServer, "") // this test is about the cache
	root = t.TempDir()
	t.Setenv(EnvCacheDir, root)
	key := useTinySource(t)
	return root, fakeEntry(t, root, key, days(30), time.Time{})
}

// exists reports whether path is there (not following a symbolic link at
// its end).
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// TestBuildPrunesUnusedEntries: a Build that finds its program in the
// cache, the first in a day, removes the other entries not used for 7
// days (with their lock files): those of earlier Kubernetes and Go
// versions, 119 MB each, stayed for ever and filled a disk. It keeps the
// entries used recently (by their marker, or, from before the markers,
// their program's time), the one another process builds (holds its lock),
// its own, and whatever is no entry of testenv's.
func TestBuildPrunesUnusedEntries(t *testing.T) {
	root, current := hitCache(t)
	outside := t.TempDir() // where a symbolic link in the cache points
	fakeEntry(t, outside, "go1.25.0-1111111111111111", days(30), time.Time{})

	old := fakeEntry(t, root, "go1.25.0-0123456789abcdef", days(30), time.Time{})        // before the markers
	oldUsed := fakeEntry(t, root, "go1.25.1-0123456789abcdef", days(30), days(8))        // used 8 days ago
	devel := fakeEntry(t, root, "devel-fedcba9876543210", days(20), days(10))            // a development Go
	usedLately := fakeEntry(t, root, "go1.25.2-0123456789abcdef", days(30), days(6))     // built long ago, used 6 days ago
	builtLately := fakeEntry(t, root, "go1.25.3-0123456789abcdef", days(6), time.Time{}) // before the markers, built 6 days ago
	locked := fakeEntry(t, root, "go1.25.4-0123456789abcdef", days(30), days(30))        // another process builds it
	orphanLock := filepath.Join(root, "go1.24.0-0123456789abcdef.lock")                  // its entry is gone
	if err := os.WriteFile(orphanLock, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	chtimes(t, orphanLock, days(30))
	foreign := []string{
		fakeEntry(t, root, "notes", days(30), time.Time{}),
		fakeEntry(t, root, "go1.25.0-0123456789ABCDEF", days(30), time.Time{}),
		fakeEntry(t, root, "go1.25.0-0123456789abcde", days(30), time.Time{}),
		fakeEntry(t, root, "go1.25.0-0123456789abcdef.bak", days(30), time.Time{}),
		fakeEntry(t, root, "x-go1.25.0-0123456789abcdef", days(30), time.Time{}),
	}
	file := filepath.Join(root, "go1.23.0-0123456789abcdef") // a file by an entry's name
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	chtimes(t, file, days(30))
	link := filepath.Join(root, "go1.22.0-0123456789abcdef") // a link by an entry's name, out of the cache
	if err := os.Symlink(filepath.Join(outside, "go1.25.0-1111111111111111"), link); err != nil {
		t.Fatal(err)
	}
	foreign = append(foreign, file, link, filepath.Join(outside, "go1.25.0-1111111111111111", "apiserver"))

	f, err := os.OpenFile(locked+".lock", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	bin, err := Build(t.Context(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(current, "apiserver"); bin != want {
		t.Fatalf("Build returned %s, want the cached %s", bin, want)
	}
	for _, gone := range []string{old, old + ".lock", oldUsed, oldUsed + ".lock", devel, devel + ".lock", orphanLock} {
		if exists(gone) {
			t.Errorf("%s, not used for 7 days, is still in the cache", gone)
		}
	}
	kept := append([]string{current, current + ".lock", bin, usedLately, usedLately + ".lock", builtLately, builtLately + ".lock", locked, locked + ".lock"}, foreign...)
	for _, k := range kept {
		if !exists(k) {
			t.Errorf("%s was removed", k)
		}
	}
}

// TestBuildPrunesAtMostDaily: Build looks for unused entries on a cache
// hit once a day, not on every hit (a hit costs two file times).
func TestBuildPrunesAtMostDaily(t *testing.T) {
	root, _ := hitCache(t)
	old := fakeEntry(t, root, "go1.25.0-0123456789abcdef", days(30), days(30))
	pruned := filepath.Join(root, testPrunedMarker)
	if err := os.WriteFile(pruned, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	chtimes(t, pruned, time.Now().Add(-23*time.Hour))
	if _, err := Build(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if !exists(old) {
		t.Fatalf("a hit pruned the cache 23 hours after the last pruning")
	}
	chtimes(t, pruned, time.Now().Add(-25*time.Hour))
	if _, err := Build(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if exists(old) {
		t.Fatalf("a hit did not prune the cache 25 hours after the last pruning: %s is still there", old)
	}
	fi, err := os.Stat(pruned)
	if err != nil || time.Since(fi.ModTime()) > time.Hour {
		t.Errorf("the time of the last pruning was not recorded: %v, %v", fi, err)
	}
}

// TestFreshBuildPrunes: a build of a new entry (a Kubernetes or Go
// upgrade: when an older entry starts to go unused) prunes the cache
// whenever it last was, and marks the new entry used.
func TestFreshBuildPrunes(t *testing.T) {
	root, current := hitCache(t)
	if err := os.RemoveAll(current); err != nil { // built below, for real
		t.Fatal(err)
	}
	old := fakeEntry(t, root, "go1.25.0-0123456789abcdef", days(30), days(8))
	pruned := filepath.Join(root, testPrunedMarker)
	if err := os.WriteFile(pruned, nil, 0o644); err != nil { // pruned a minute ago
		t.Fatal(err)
	}
	if _, err := Build(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if exists(old) {
		t.Errorf("a fresh build kept %s, not used for 8 days", old)
	}
	if !exists(filepath.Join(current, testUsedMarker)) {
		t.Errorf("a fresh build did not mark its entry used")
	}
}

// TestBuildMarksEntryUsed: a cache hit marks its entry used (the time of
// its marker file), at most once an hour, so that a hit writes nothing
// most of the time; an entry from before the markers gets one.
func TestBuildMarksEntryUsed(t *testing.T) {
	_, current := hitCache(t)
	marker := filepath.Join(current, testUsedMarker)
	used := func() time.Time {
		t.Helper()
		fi, err := os.Stat(marker)
		if err != nil {
			t.Fatalf("entry %s has no used marker after a hit: %v", current, err)
		}
		return fi.ModTime()
	}
	build := func() {
		t.Helper()
		if _, err := Build(t.Context(), io.Discard); err != nil {
			t.Fatal(err)
		}
	}
	build()
	if at := used(); time.Since(at) > time.Minute {
		t.Errorf("an entry from before the markers, hit, is marked used at %s, want now", at)
	}
	recent := time.Now().Add(-50 * time.Minute).Truncate(time.Second)
	chtimes(t, marker, recent)
	build()
	if at := used(); !at.Equal(recent) {
		t.Errorf("a hit 50 minutes after the last mark moved it to %s; want it kept at %s (at most once an hour)", at, recent)
	}
	chtimes(t, marker, time.Now().Add(-70*time.Minute))
	build()
	if at := used(); time.Since(at) > time.Minute {
		t.Errorf("a hit 70 minutes after the last mark left it at %s, want now", at)
	}
}

// TestBuildWithUnwritableMarkers: markers that cannot be written (a
// read-only cache; here links to nowhere, which stop root too) fail
// nothing: a hit returns the program all the same and prunes nothing.
func TestBuildWithUnwritableMarkers(t *testing.T) {
	root, current := hitCache(t)
	old := fakeEntry(t, root, "go1.25.0-0123456789abcdef", days(30), time.Time{})
	nowhere := filepath.Join(t.TempDir(), "missing", "file")
	for _, marker := range []string{filepath.Join(current, testUsedMarker), filepath.Join(root, testPrunedMarker)} {
		if err := os.Symlink(nowhere, marker); err != nil {
			t.Fatal(err)
		}
	}
	bin, err := Build(t.Context(), io.Discard)
	if err != nil || bin != filepath.Join(current, "apiserver") {
		t.Fatalf("Build with unwritable markers: %s, %v; want the cached program", bin, err)
	}
	if !exists(old) {
		t.Errorf("Build pruned %s although it could not record the pruning", old)
	}
}

// TestEnvAPIServerPrunesNothing: with EnvAPIServer the user manages the
// program: Build neither builds nor prunes.
func TestEnvAPIServerPrunesNothing(t *testing.T) {
	root, current := hitCache(t)
	old := fakeEntry(t, root, "go1.25.0-0123456789abcdef", days(30), time.Time{})
	t.Setenv(EnvAPIServer, filepath.Join(old, "apiserver"))
	if _, err := Build(t.Context(), io.Discard); err != nil {
		t.Fatal(err)
	}
	if !exists(old) || exists(filepath.Join(current, testUsedMarker)) || exists(filepath.Join(root, testPrunedMarker)) {
		t.Errorf("Build with %s changed the cache", EnvAPIServer)
	}
}

// TestLockFileRemovedWhileWaiting: a lock file that the process holding it
// removes (pruning its entry) before it unlocks is not the lock of the
// path any more; lockFile, which waited on it, locks the file now at the
// path instead, so that two builds of the entry still exclude each other.
func TestLockFileRemovedWhileWaiting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "go1.25.0-0123456789abcdef.lock")
	holder, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if err := syscall.Flock(int(holder.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	type result struct {
		unlock func()
		err    error
	}
	done := make(chan result, 1)
	go func() {
		unlock, err := lockFile(t.Context(), path, func() { close(waiting) })
		done <- result{unlock, err}
	}()
	<-waiting
	if err := os.Remove(path); err != nil { // the holder prunes the entry
		t.Fatal(err)
	}
	_ = syscall.Flock(int(holder.Fd()), syscall.LOCK_UN)
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	defer r.unlock()
	other, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644) // the next build
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := syscall.Flock(int(other.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		t.Fatalf("lockFile locked a removed file: another process locks %s at the same time", path)
	}
}

// TestBuildKeepsItsOwnEntry: pruning never removes the entry of the
// Build that prunes, even one it cannot mark used (here its marker is a
// directory) and that looks unused for a month.
func TestBuildKeepsItsOwnEntry(t *testing.T) {
	_, current := hitCache(t)
	marker := filepath.Join(current, testUsedMarker)
	if err := os.Mkdir(marker, 0o755); err != nil {
		t.Fatal(err)
	}
	chtimes(t, marker, days(30))
	chtimes(t, current, days(30))
	bin, err := Build(t.Context(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if !exists(bin) {
		t.Errorf("Build pruned its own entry %s", current)
	}
}

// progressLog is a Build's progress, written by its goroutine and read by
// the test's.
type progressLog struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (w *progressLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(p)
}

func (w *progressLog) contains(s string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Contains(w.buf.String(), s)
}

// TestBuildHitWhilePruned: a Build that finds its program in an entry not
// used for a week, while another process prunes that entry (holds its
// lock, has looked at it again under the lock and found it unused), waits
// for the pruning and builds the entry again. It returned the program at
// once, marked used too late, and the pruning removed it: the test
// process's start of it failed with "no such file or directory".
func TestBuildHitWhilePruned(t *testing.T) {
	_, current := hitCache(t)
	// The other process's pruning, up to its removal of the entry.
	unlock, ok := tryLockFile(current + ".lock")
	if !ok {
		t.Fatalf("cannot lock %s.lock", current)
	}
	if unused := time.Since(lastUsed(current)); unused < PruneAfter {
		t.Fatalf("entry %s was used %s ago; the test needs one unused for %s", current, unused, PruneAfter)
	}
	type result struct {
		bin string
		err error
	}
	done := make(chan result, 1)
	progress := &progressLog{}
	go func() {
		bin, err := Build(t.Context(), progress)
		done <- result{bin, err}
	}()
	// Build returns, or waits for the entry's lock.
	var r *result
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		select {
		case got := <-done:
			r = &got
			return true, nil
		default:
			return progress.contains("waiting"), nil
		}
	}); err != nil {
		unlock()
		t.Fatalf("Build neither returned nor waited for the lock of its entry, which another process holds: %v", err)
	}
	// The pruning removes the entry and its lock file, then unlocks.
	if err := os.RemoveAll(current); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(current + ".lock"); err != nil {
		t.Fatal(err)
	}
	unlock()
	if r == nil {
		got := <-done
		r = &got
	}
	if r.err != nil {
		t.Fatalf("Build: %v", r.err)
	}
	if !executable(r.bin) {
		t.Fatalf("Build returned %s, which the pruning it raced with removed: the start of the server would fail", r.bin)
	}
}
