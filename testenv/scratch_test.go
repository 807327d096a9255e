package testenv_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scratchTest is the whole test file of a user's module that uses testenv.
const scratchTest = `package scratch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/testenv"
)

func TestAgainstARealServer(t *testing.T) {
	env := testenv.New(t)
	c := kubernetes.NewForConfigOrDie(env.Config())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"}}
	if _, err := c.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CoreV1().ConfigMaps("default").Get(t.Context(), "hello", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}
`

// TestScratchModule is a user's module outside this repository: it requires
// testenv (replaced by this checkout only because the module is not
// published), needs no other replace line, has no k8s.io/kubernetes in its
// module graph, and its test runs against the real server.
func TestScratchModule(t *testing.T) {
	t.Parallel() // a module of its own in a temporary directory
	if testing.Short() {
		t.Skip("builds and runs another module's test")
	}
	here, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	gomod := "module example.com/scratch\n\ngo 1.26.0\n\n" +
		"require github.com/operatorkit/operatorkit/testenv v0.0.0\n\n" +
		"replace github.com/operatorkit/operatorkit/testenv => " + here + "\n"
	for name, data := range map[string]string{"go.mod": gomod, "scratch_test.go": scratchTest} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), "go", args...)
		cmd.Dir = dir
		// The caller's GOFLAGS stay (make test's -trimpath: the packages
		// its other builds compiled are found in the build cache).
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	goCmd("mod", "tidy")
	mod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(mod), "=>"); n != 1 {
		t.Errorf("the user's go.mod has %d replace lines, want only the one for the unpublished testenv:\n%s", n, mod)
	}
	if graph := goCmd("mod", "graph"); strings.Contains(graph, "k8s.io/kubernetes") {
		t.Errorf("the user's module graph holds k8s.io/kubernetes:\n%s", graph)
	}
	out := goCmd("test", "-count=1", "-v", ".")
	if !strings.Contains(out, "--- PASS: TestAgainstARealServer") {
		t.Errorf("the user's test did not pass:\n%s", out)
	}
}
