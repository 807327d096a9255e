//go:build unix

package testenv

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"testing/fstest"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// TestBuildDeadlineWhileWaitingForAnotherBuild: Build's deadline does not
// bound the build, also while it waits for another process's build of the
// same entry (the lock): it failed with the deadline there.
func TestBuildDeadlineWhileWaitingForAnotherBuild(t *testing.T) {
	t.Setenv(EnvAPIServer, "") // this test is about building
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	key := useTinySource(t)
	// "Another process" builds: it holds the entry's lock (flock conflicts
	// between two open file descriptions, even in one process).
	f, err := os.OpenFile(filepath.Join(cache, key+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	done := make(chan error, 1)
	go func() { _, err := Build(ctx, os.Stderr); done <- err }()
	<-ctx.Done()                                    // the deadline passes while the other build runs
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) // it ends without a result: this one builds
	if err := <-done; err != nil {
		t.Fatalf("Build with a deadline that passed while it waited for another build: %v", err)
	}
}

// buildStarted closes ch when the build's progress says it started.
type buildStarted struct {
	mu   sync.Mutex
	buf  strings.Builder
	once sync.Once
	ch   chan struct{}
}

func (w *buildStarted) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(w.buf.String(), "testenv: building") {
		w.once.Do(func() { close(w.ch) })
	}
	return len(p), nil
}

// TestCanceledBuildCleansUp: a canceled first build leaves no work
// directory of the go command behind (killed, the go command left it, with
// partial archives, and its compilers running).
func TestCanceledBuildCleansUp(t *testing.T) {
	t.Setenv(EnvAPIServer, "") // this test is about building
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	t.Setenv("GOCACHE", t.TempDir()) // a cold build: long enough to cancel
	old := source
	source = fstest.MapFS{
		"apiserver/main.go":    {Data: []byte("//go:build ignore\n\npackage main\n\nimport _ \"net/http\"\n\nfunc main() {}\n")},
		"apiserver/go.mod.txt": {Data: []byte("module example.com/slow\n\ngo 1.26.0\n")},
		"apiserver/go.sum.txt": {Data: []byte("")},
	}
	t.Cleanup(func() { source = old })
	workDirs := func(pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(cache, "*", pattern))
		return m
	}
	ctx, cancel := context.WithCancel(t.Context())
	progress := &buildStarted{ch: make(chan struct{})}
	done := make(chan error, 1)
	go func() { _, err := Build(ctx, progress); done <- err }()
	<-progress.ch
	if err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(workDirs("work.tmp-*/go-build*")) > 0, nil
	}); err != nil {
		t.Fatalf("the go command made no work directory under %s", cache)
	}
	cancel()
	if err := <-done; err == nil {
		t.Fatal("a build of net/http with an empty build cache finished before its cancel; the test needs a longer build")
	}
	if left := workDirs("work.tmp-*"); len(left) > 0 {
		t.Errorf("after a canceled Build its work directories remain: %v", left)
	}
}

// TestKilledBuildLeftoversRemoved: what a build killed with its test
// process (SIGKILL, an interrupt) leaves in the cache entry (the go
// command's work directory, a half-written program) is removed by the
// next build of the entry; it stayed there for ever, up to hundreds of MB
// per killed build of the server.
func TestKilledBuildLeftoversRemoved(t *testing.T) {
	t.Setenv(EnvAPIServer, "") // this test is about building; not parallel: Setenv
	realGo, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	// A go command whose build writes part of the program and then runs
	// until it is killed: the test process is killed mid-build, every time.
	bin := t.TempDir()
	script := "#!/bin/sh\nif [ \"$1\" = build ]; then\n" +
		"  while [ $# -gt 0 ]; do if [ \"$1\" = -o ]; then echo partial > \"$2\"; fi; shift; done\n" +
		"  exec sleep 3600\nfi\nexec " + realGo + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(bin, "go"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	leftovers := func() []string {
		var all []string
		for _, pattern := range []string{"work.tmp-*", "apiserver.tmp-*"} {
			m, _ := filepath.Glob(filepath.Join(cache, "*", pattern))
			all = append(all, m...)
		}
		return all
	}
	cmd := helperCmd(t, "build", EnvCacheDir+"="+cache, "PATH="+bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return len(leftovers()) == 2, nil
	}); err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("the build did not start: %v", leftovers())
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	t.Setenv(EnvCacheDir, cache)
	old := source
	source = tinySource
	t.Cleanup(func() { source = old })
	built, err := Build(t.Context(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), built).Output(); err != nil || string(out) != "tiny test API server\n" {
		t.Errorf("program %s printed %q, %v; want the built source's line", built, out, err)
	}
	if left := leftovers(); len(left) > 0 {
		t.Errorf("after the next build, the killed build's temporaries remain: %v", left)
	}
}

// TestUnwritableCache: a cache directory that cannot be written (a
// read-only HOME in a sandbox or CI container) fails the build with an
// error that names the directory and says how to choose another; some
// stages named neither (the lock file, the source), none said how.
func TestUnwritableCache(t *testing.T) {
	t.Setenv(EnvAPIServer, "") // this test is about building; not parallel: Setenv
	old := source
	source = tinySource
	t.Cleanup(func() { source = old })
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	goBin, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	key, err := cacheKey(t.Context(), goBin)
	if err != nil {
		t.Fatal(err)
	}

	// The user's cache directory (XDG_CACHE_HOME on Linux) below a file.
	t.Setenv(EnvCacheDir, "")
	t.Setenv("XDG_CACHE_HOME", filepath.Join(file, "cache"))
	root := filepath.Join(file, "cache", "operatorkit-testenv")
	_, err = Build(t.Context(), io.Discard)
	if want := "testenv: cannot write the cache directory " + root + " (set " + EnvCacheDir + " to a writable directory)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Build with the user's cache directory below a file: %v, want %q", err, want)
	}

	// EnvCacheDir's entry (where the source goes) is a file, its lock a
	// directory.
	for _, block := range []string{key, key + ".lock/x"} {
		root := t.TempDir()
		t.Setenv(EnvCacheDir, root)
		if err := os.MkdirAll(filepath.Dir(filepath.Join(root, block)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, block), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Build(t.Context(), io.Discard)
		if want := "testenv: cannot write the cache directory " + root + " (the directory of " + EnvCacheDir + ")"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Build with %s in the way: %v, want %q", block, err, want)
		}
	}
}
