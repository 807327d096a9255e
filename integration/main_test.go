package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/go-kit/log"

	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/testenv"
)

// env is the API server shared by every test in this package. Tests must not
// stop or restart it; a test that needs that starts its own with testenv.New.
var env *testenv.Env

// subprocessMain, when set (by an init of a test file), is asked first
// whether this process is a helper process that a test started (such as a
// sharded operator's replica): then it runs it and returns its exit code.
var subprocessMain func() (code int, ok bool)

func TestMain(m *testing.M) {
	if subprocessMain != nil {
		if code, ok := subprocessMain(); ok {
			os.Exit(code)
		}
	}
	os.Exit(run(m))
}

// defaultParallel is how many tests run at once when -parallel is not given.
// Most tests call t.Parallel: each uses a namespace of its own on env, or a
// server of its own. They wait for API servers far more than they compute,
// so go test's default, GOMAXPROCS, would leave a 2-core machine idle.
// Tests that must run alone (a leak check sees every goroutine of the
// process; a lease's timing) are not parallel: they run first, before any
// parallel test starts.
const defaultParallel = 16

func run(m *testing.M) int {
	flag.Parse()
	// The first RedirectKlog of a process writes klog's unguarded logger;
	// make it here, before any client-go goroutine logs (the plan tests'
	// Commands redirect klog while other tests' watches run).
	operatorpkg.RedirectKlog(log.NewNopLogger())()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(defaultParallel, runtime.GOMAXPROCS(0))))
	}

	// The first build (minutes, once per machine) has no deadline; the start does.
	if _, err := testenv.Build(context.Background(), os.Stderr); err != nil {
		fmt.Fprintf(os.Stderr, "build the test API server: %v\n", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var err error
	env, err = testenv.Start(ctx, testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "start test environment: %v\n", err)
		return 1
	}
	defer env.Stop()
	return m.Run()
}

var nsCounter atomic.Int64

// newNamespace creates a namespace of its own for t on the shared server and
// returns its name. Namespaces are never deleted: without a controller-manager
// they would never finish terminating.
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", dnsName(t.Name()), nsCounter.Add(1))
	_, err := kubeClient(t).CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

// kubeClient returns a typed clientset for the shared server.
func kubeClient(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatalf("new clientset: %v", err)
	}
	return c
}

// dnsName turns a test name into a DNS-1123 label prefix of at most 40 chars.
func dnsName(s string) string {
	s = strings.ToLower(s)
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > 40 {
		out = strings.TrimRight(out[:40], "-")
	}
	return out
}
