package testenv

import (
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Environment variables that change where the server program comes from.
const (
	// EnvCacheDir names the directory that holds built server programs.
	// Empty means "operatorkit-testenv" in os.UserCacheDir.
	EnvCacheDir = "OPERATORKIT_TESTENV_CACHE"
	// EnvAPIServer names a server program built elsewhere (for instance by
	// `go build` in a copy of the module Build writes); testenv then runs
	// it, and builds and prunes nothing. A program in the cache directory
	// named here is no use of its entry, which other Builds remove after
	// PruneAfter: copy it out of the cache to keep it.
	EnvAPIServer = "OPERATORKIT_TESTENV_APISERVER"
)

// DefaultBuildTimeout bounds the first build of the server program.
const DefaultBuildTimeout = 30 * time.Minute

// The server program's source: a main package that is not part of this
// module (its build constraint is "ignore"), with the go.mod and go.sum of
// the module it is built in. go.mod.txt holds the replace block that
// k8s.io/kubernetes needs; no module that imports testenv needs it.
//
//go:embed apiserver/main.go apiserver/go.mod.txt apiserver/go.sum.txt
var embedded embed.FS

// source is where build reads the program's files (sourceFiles) from:
// embedded, except in this package's tests of the build itself, which
// build a tiny program instead of linking the server again.
var source fs.FS = embedded

// sourceFiles maps each embedded file to its name in the build module.
var sourceFiles = map[string]string{
	"apiserver/main.go":    "main.go",
	"apiserver/go.mod.txt": "go.mod",
	"apiserver/go.sum.txt": "go.sum",
}

// Build returns the path of the server program that Start runs, building it
// first when the cache has none for this source and Go version: it writes
// the program's module into the cache directory (see EnvCacheDir) and runs
// `go build` there, which takes several minutes the first time (about 8 on 2
// cores with empty module and build caches, 3 GB of memory in the link step)
// and says so on progress (nil: os.Stderr). Processes that call Build at the
// same time build once: the cache entry is locked while it is built, and the
// others wait for it; what a build killed with its process left in the entry
// (where the platform locks it) the next build removes. Build marks the
// entry it returns used (at most once an hour, so that finding the program
// in the cache writes nothing most of the time; the mark is made under the
// entry's lock, so that a program another process is pruning is built
// again, never returned to be removed before its start) and removes the
// cache's other entries not used for PruneAfter (a week): after it builds
// a new entry, and otherwise at most once a day. It never removes an entry
// another process is building, and where flock is missing (Windows) it
// removes none; a cache it cannot write (read-only) is used all the same,
// and not pruned. ctx's cancellation stops the build; its deadline does
// not, DefaultBuildTimeout does. Of the caller's GOFLAGS the build keeps
// only -trimpath and -gcflags, so that the packages the server shares with
// the caller's own builds compile once.
// Start calls Build; call it yourself to build ahead of tests (make does,
// before running packages in parallel).
func Build(ctx context.Context, progress io.Writer) (string, error) {
	if progress == nil {
		progress = os.Stderr
	}
	return build(ctx, progress)
}

func build(ctx context.Context, progress io.Writer) (string, error) {
	if bin := os.Getenv(EnvAPIServer); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("testenv: %s=%s: %w", EnvAPIServer, bin, err)
		}
		return bin, nil
	}
	goBin, err := goCommand()
	if err != nil {
		return "", err
	}
	key, err := cacheKey(ctx, goBin)
	if err != nil {
		return "", err
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	entry := filepath.Join(root, key)
	bin := filepath.Join(entry, "apiserver")
	if executable(bin) {
		now := time.Now()
		if useEntry(ctx, entry, bin, now, progress) {
			maybePrune(root, key, now)
			return bin, nil
		}
		// Another process pruned the entry (unused for PruneAfter)
		// while this one looked at it: built again below.
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", cacheError(root, err)
	}
	// Waiting for another process's build is part of the build: bounded
	// by ctx's cancellation and DefaultBuildTimeout, not ctx's deadline.
	lctx, stopLock := buildContext(ctx)
	unlock, err := lockFile(lctx, entry+".lock", func() {
		fmt.Fprintf(progress, "testenv: waiting for another process that is building the test API server into %s\n", entry)
	})
	stopLock()
	var pathErr *fs.PathError
	switch {
	case errors.As(err, &pathErr): // the lock file cannot be created
		return "", cacheError(root, err)
	case err != nil:
		return "", err
	}
	defer unlock()
	if executable(bin) { // built by the process we waited for
		markUsed(entry, time.Now())
		return bin, nil
	}
	removeStale(entry)
	if err := writeSource(filepath.Join(entry, "src")); err != nil {
		return "", cacheError(root, err)
	}
	fmt.Fprintf(progress, "testenv: building the test API server (kube-apiserver and etcd from Go modules) into %s.\n"+
		"testenv: this happens once per Kubernetes and Go version: 4 to 8 minutes on 2 cores with empty Go caches\n"+
		"testenv: (3 GB of memory when linking), about a minute when Go's build cache is warm.\n", entry)
	start := time.Now()
	bctx, cancel := buildContext(ctx)
	defer cancel()
	tmp := filepath.Join(entry, fmt.Sprintf("apiserver.tmp-%d", os.Getpid()))
	// Compiled as the caller's own builds are, so that the packages both
	// use (k8s.io/api, apimachinery, client-go) compile once.
	args := append([]string{"build", "-ldflags=-s -w"}, sharedBuildFlags(os.Getenv("GOFLAGS"))...)
	cmd := exec.CommandContext(bctx, goBin, append(args, "-o", tmp, ".")...)
	// Canceled, the go command is killed with its compilers (where the
	// platform can), and its work directory, in a GOTMPDIR of this build's
	// own, is removed below: a killed go command leaves it.
	cmd.SysProcAttr = buildProcAttr()
	cmd.Cancel = func() error { return killBuild(cmd.Process) }
	cmd.WaitDelay = 5 * time.Second
	cmd.Dir = filepath.Join(entry, "src")
	work := filepath.Join(entry, fmt.Sprintf("work.tmp-%d", os.Getpid()))
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", cacheError(root, err)
	}
	defer os.RemoveAll(work)
	cmd.Env = append(buildEnv(os.Environ()), "GOTMPDIR="+work)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, io.MultiWriter(&out, progress)
	if err := cmd.Run(); err != nil {
		os.Remove(tmp)
		if ctx.Err() != nil {
			err = errors.Join(err, context.Cause(ctx))
		}
		return "", fmt.Errorf("testenv: build the test API server in %s: %w\n%s", cmd.Dir, err, out.Bytes())
	}
	if err := install(tmp, bin); err != nil {
		os.Remove(tmp)
		return "", cacheError(root, err)
	}
	fmt.Fprintf(progress, "testenv: built the test API server in %s\n", time.Since(start).Round(time.Second))
	now := time.Now()
	markUsed(entry, now)
	pruneCache(root, key, now)
	return bin, nil
}

// buildGOGC is the GOGC of the server's build when the caller sets none:
// the compiler and the linker collect garbage less often, for about a fifth
// less CPU (k8s.io/api in an empty build cache: 113 s of CPU against 143 s
// with the default 100, on 2 cores) at a few hundred MB more memory per
// compile and about 0.2 GB more in the 3 GB link. GOGC does not change what
// is compiled, so the build cache's entries are shared with the caller's
// own builds all the same.
const buildGOGC = "400"

// buildEnv returns the environment of the server's build: the caller's
// environ, with the module of the program built on its own (GOWORK=off,
// modules on), none of the caller's GOFLAGS (build takes -trimpath and
// -gcflags from them itself), and GOGC=buildGOGC unless environ sets GOGC.
func buildEnv(environ []string) []string {
	env := append(slices.Clip(environ), "GOWORK=off", "GOFLAGS=", "GO111MODULE=on")
	if !slices.ContainsFunc(environ, func(kv string) bool { return strings.HasPrefix(kv, "GOGC=") }) {
		env = append(env, "GOGC="+buildGOGC)
	}
	return env
}

// sharedBuildFlags returns the flags of goflags, the caller's GOFLAGS, that
// the server's build takes over: -trimpath and -gcflags, the two that change
// the build cache's keys of the packages the server shares with the
// caller's own builds (make test sets both). The server's build clears
// GOFLAGS otherwise (-mod=vendor, say, is the caller's module's business).
// The last of each flag wins, as with the go command; a -gcflags value with
// quotes is not taken over (GOFLAGS splits on spaces unless quoted, and
// such a value is better not guessed at). The program built is cached
// whatever flags built it: they change how it was compiled, not what it
// does.
func sharedBuildFlags(goflags string) []string {
	trim, gcflags := false, "" // "": none
	for _, f := range strings.Fields(goflags) {
		name, value, hasValue := strings.Cut(strings.TrimLeft(f, "-"), "=")
		switch name {
		case "trimpath":
			on, err := strconv.ParseBool(value)
			trim = !hasValue || (err == nil && on)
		case "gcflags":
			gcflags = "-gcflags=" + value
			if strings.ContainsAny(value, `"'`) {
				gcflags = ""
			}
		}
	}
	var out []string
	if trim {
		out = append(out, "-trimpath")
	}
	if gcflags != "" {
		out = append(out, gcflags)
	}
	return out
}

// buildContext is ctx without its deadline (a start timeout must not cut a
// first build short) but with its cancellation, bounded by
// DefaultBuildTimeout.
func buildContext(ctx context.Context) (context.Context, context.CancelFunc) {
	bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), DefaultBuildTimeout)
	stop := context.AfterFunc(ctx, func() {
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			cancel()
		}
	})
	return bctx, func() { stop(); cancel() }
}

// goCommand finds the go command: the one on PATH, or the one of the
// toolchain that built this binary.
func goCommand() (string, error) {
	if p, err := exec.LookPath("go"); err == nil {
		return p, nil
	}
	p := filepath.Join(runtime.GOROOT(), "bin", "go")
	if executable(p) {
		return p, nil
	}
	return "", errors.New("testenv: the go command is needed to build the test API server, and it is neither on PATH nor in GOROOT")
}

// cacheKey identifies a build: the embedded source, and the Go version and
// platform that build it.
func cacheKey(ctx context.Context, goBin string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"apiserver/main.go", "apiserver/go.mod.txt", "apiserver/go.sum.txt"} {
		data, err := fs.ReadFile(source, name)
		if err != nil {
			return "", fmt.Errorf("testenv: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", name, len(data))
		h.Write(data)
	}
	cmd := exec.CommandContext(ctx, goBin, "env", "GOVERSION", "GOOS", "GOARCH")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("testenv: %s env: %w", goBin, err)
	}
	h.Write(out)
	ver := strings.Fields(string(out))
	if len(ver) == 0 {
		return "", fmt.Errorf("testenv: %s env printed nothing", goBin)
	}
	return ver[0] + "-" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// cacheError is err, a failed write into the cache directory root, with
// what to do about it: HOME (os.UserCacheDir) is read-only in some
// sandboxes and CI containers, and EnvCacheDir then chooses another.
func cacheError(root string, err error) error {
	how := "set " + EnvCacheDir + " to a writable directory"
	if os.Getenv(EnvCacheDir) != "" {
		how = "the directory of " + EnvCacheDir
	}
	return fmt.Errorf("testenv: cannot write the cache directory %s (%s): %w", root, how, err)
}

func cacheRoot() (string, error) {
	if dir := os.Getenv(EnvCacheDir); dir != "" {
		return filepath.Abs(dir)
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("testenv: no cache directory (set %s): %w", EnvCacheDir, err)
	}
	return filepath.Join(dir, "operatorkit-testenv"), nil
}

// writeSource writes the server program's module into dir.
func writeSource(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for from, to := range sourceFiles {
		data, err := fs.ReadFile(source, from)
		if err != nil {
			return err
		}
		if to == "main.go" {
			// In its own module the program is built, not ignored.
			data = bytes.Replace(data, []byte("//go:build ignore\n"), nil, 1)
		}
		if err := os.WriteFile(filepath.Join(dir, to), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// removeStale removes what builds of entry that were killed (a SIGKILLed
// or interrupted test process) left: the go command's work directories
// and half-written programs, a few MB to a few hundred MB each, which no
// later build used or removed. It runs only where lockFile excludes other
// builds, under the lock: the temporaries there are then no live build's.
func removeStale(entry string) {
	if !lockExcludes {
		return
	}
	own := fmt.Sprintf(".tmp-%d", os.Getpid()) // another Build of this process
	for _, pattern := range []string{"work.tmp-*", "apiserver.tmp-*"} {
		stale, _ := filepath.Glob(filepath.Join(entry, pattern))
		for _, p := range stale {
			if !strings.HasSuffix(p, own) {
				_ = os.RemoveAll(p)
			}
		}
	}
}

// install renames the program built at tmp to bin durably: the program is
// synced to disk before the rename and the directory after it, so that a
// crash leaves either no program at bin or the whole one. Renamed unsynced,
// the name could reach the disk before the data, and a crash leave a
// zero-length program at bin.
func install(tmp, bin string) error {
	if err := syncPath(tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, bin); err != nil {
		return err
	}
	if runtime.GOOS == "windows" {
		return nil // a directory cannot be synced there; the rename is durable
	}
	return syncPath(filepath.Dir(bin))
}

// syncPath syncs the file or directory at path to disk (a variable for the
// tests).
var syncPath = func(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// executable reports whether path is a built program: an executable
// regular file with contents (a zero-length one is what a crash left of a
// program renamed before it reached the disk, by a build before install).
func executable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 && fi.Size() > 0
}
