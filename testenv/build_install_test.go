//go:build unix

package testenv

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestTornProgramIsRebuilt: a zero-length program in the cache entry (what
// a crash right after the rename of a program not yet on disk leaves) is
// not a built program: Build builds it again. It took any executable file
// for built, and every Start then failed to run the empty program.
func TestTornProgramIsRebuilt(t *testing.T) {
	t.Setenv(EnvAPIServer, "") // this test is about building
	cache := t.TempDir()
	t.Setenv(EnvCacheDir, cache)
	old := source
	source = tinySource
	t.Cleanup(func() { source = old })
	goBin, err := goCommand()
	if err != nil {
		t.Fatal(err)
	}
	key, err := cacheKey(t.Context(), goBin)
	if err != nil {
		t.Fatal(err)
	}
	torn := filepath.Join(cache, key, "apiserver")
	if err := os.MkdirAll(filepath.Dir(torn), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(torn, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	built, err := Build(t.Context(), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.CommandContext(t.Context(), built).Output(); err != nil || string(out) != "tiny test API server\n" {
		t.Errorf("program %s printed %q, %v; want the built source's line (a zero-length program was taken for built)", built, out, err)
	}
}

// TestBuiltProgramIsSyncedBeforeItsRename: the build syncs the program to
// disk before it renames it into place, and the cache entry's directory
// after, so that a crash leaves no program or the whole one: renamed
// unsynced, a crash could leave a zero-length program under the final
// name. Read from the system calls of a build (strace; skipped without
// it).
func TestBuiltProgramIsSyncedBeforeItsRename(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("needs strace to see the build's system calls")
	}
	if out, err := exec.CommandContext(t.Context(), strace, "-o", os.DevNull, "true").CombinedOutput(); err != nil {
		t.Skipf("strace cannot trace here: %v %s", err, out)
	}
	t.Setenv(EnvAPIServer, "") // this test is about building
	cache, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	traceFile := filepath.Join(t.TempDir(), "strace")
	helper := helperCmd(t, "build", EnvCacheDir+"="+cache)
	cmd := exec.CommandContext(t.Context(), strace, append([]string{"-f", "-y", "-o", traceFile,
		"-e", "trace=fsync,fdatasync,rename,renameat,renameat2"}, helper.Args...)...)
	cmd.Env = helper.Env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("build: %v\n%s", err, stderr.Bytes())
	}
	bin := strings.TrimSpace(strings.TrimPrefix(stdout.String(), "bin="))
	entry := filepath.Dir(bin)
	if !strings.HasPrefix(entry, cache) {
		t.Fatalf("built %q, not in the cache %s", bin, cache)
	}
	data, err := os.ReadFile(traceFile)
	if err != nil {
		t.Fatal(err)
	}
	// The builder's own calls: those of the process that renames.
	var pid string
	var calls []string
	lines := strings.Split(string(data), "\n")
	for _, l := range lines {
		if strings.Contains(l, "rename") && strings.Contains(l, entry+"/apiserver.tmp-") && strings.Contains(l, `"`+bin+`"`) {
			pid, _, _ = strings.Cut(l, " ")
		}
	}
	if pid == "" {
		t.Fatalf("no rename of the program into %s among the build's calls:\n%s", bin, data)
	}
	for _, l := range lines {
		p, call, _ := strings.Cut(l, " ")
		if p != pid {
			continue
		}
		call = strings.TrimSpace(call)
		switch {
		case strings.HasPrefix(call, "rename"):
			calls = append(calls, "rename")
		case strings.Contains(call, "sync(") && strings.Contains(call, "<"+entry+"/apiserver.tmp-"):
			calls = append(calls, "sync program")
		case strings.Contains(call, "sync(") && strings.Contains(call, "<"+entry+">"):
			calls = append(calls, "sync entry")
		}
	}
	if got, want := strings.Join(calls, ", "), "sync program, rename, sync entry"; got != want {
		t.Errorf("the builder's calls = %s, want %s", got, want)
	}
}
