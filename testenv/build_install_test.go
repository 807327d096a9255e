//go:build unix

package testenv

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
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
	key := useTinySource(t)
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

// TestInstallSyncsBeforeAndAfterItsRename: install syncs the program
// before it renames it into place (so that the name cannot reach the disk
// before the data: a crash would leave a zero-length program) and the
// directory after (so that the rename itself is on disk). It renamed the
// program unsynced.
func TestInstallSyncsBeforeAndAfterItsRename(t *testing.T) {
	dir := t.TempDir()
	tmp, bin := filepath.Join(dir, "apiserver.tmp"), filepath.Join(dir, "apiserver")
	if err := os.WriteFile(tmp, []byte("program"), 0o755); err != nil {
		t.Fatal(err)
	}
	var calls []string
	old := syncPath
	syncPath = func(path string) error {
		_, binErr := os.Stat(bin)
		calls = append(calls, fmt.Sprintf("sync %s (program installed: %t)", filepath.Base(path), binErr == nil))
		return old(path)
	}
	t.Cleanup(func() { syncPath = old })
	if err := install(tmp, bin); err != nil {
		t.Fatal(err)
	}
	want := []string{"sync apiserver.tmp (program installed: false)", fmt.Sprintf("sync %s (program installed: true)", filepath.Base(dir))}
	if !slices.Equal(calls, want) {
		t.Fatalf("install synced %q, want %q", calls, want)
	}
	if b, err := os.ReadFile(bin); err != nil || string(b) != "program" {
		t.Fatalf("installed program %q, %v; want %q", b, err, "program")
	}
}
