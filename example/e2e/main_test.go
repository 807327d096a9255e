package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/example/internal/proctest"
)

// binDir holds the binaries built once for the package.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "operatorkit-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	stopCluster()
	os.RemoveAll(dir)
	os.Exit(code)
}

var buildOnce sync.Map // package -> *buildResult

type buildResult struct {
	once sync.Once
	path string
	err  error
}

// build builds ./cmd/<name> of the example module once and returns the
// binary's path.
func build(t *testing.T, name string) string {
	t.Helper()
	v, _ := buildOnce.LoadOrStore(name, &buildResult{})
	b := v.(*buildResult)
	b.once.Do(func() {
		b.path = filepath.Join(binDir, name)
		cmd := exec.Command("go", "build", "-o", b.path, "./cmd/"+name)
		cmd.Dir = ".."
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build ./cmd/%s: %v\n%s", name, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// start runs bin with args; stdout and stderr lines are kept (and logged
// when the test failed) and go to onLine.
func start(t *testing.T, bin string, args []string, onLine func(string)) *proctest.Process {
	t.Helper()
	return proctest.Start(t, proctest.Config{Name: filepath.Base(bin), OnLine: onLine}, bin, args...)
}

// contextFor returns a context that ends shortly before the test's
// deadline.
func contextFor(t *testing.T) context.Context {
	ctx := t.Context()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-10*time.Second))
		t.Cleanup(cancel)
	}
	return ctx
}
