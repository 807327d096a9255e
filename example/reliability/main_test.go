package reliability

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/example/internal/proctest"

	"github.com/go-kit/log"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/testenv"
)

// n is how many WebApps each test runs with.
const n = 50

// shared is the package's API server, with RBAC on and the WebApp CRD,
// started by the first test that needs it (so that listing the tests, as
// make test-fuzz does, starts nothing) and stopped by TestMain.
var shared struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// binDir holds the webapp-operator binary, built on first use.
var binDir string

func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	var err error
	if binDir, err = os.MkdirTemp("", "operatorkit-reliability-"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(binDir)
	defer func() {
		if shared.env != nil {
			shared.env.Stop()
		}
	}()
	return m.Run()
}

// server returns the package's API server, starting it on first use.
func server(t *testing.T) *testenv.Env {
	t.Helper()
	shared.once.Do(func() {
		// The first build (minutes, once per machine) has no deadline; the start does.
		if _, shared.err = testenv.Build(context.Background(), os.Stderr); shared.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The WebApp CRD as controller-gen wrote it, served when Start returns.
		shared.env, shared.err = testenv.Start(ctx, testenv.Options{RBAC: true, CRDs: []string{"../config/crd"}})
	})
	if shared.err != nil {
		t.Fatalf("start the API server: %v", shared.err)
	}
	return shared.env
}

// --- clients, namespaces, identities ---------------------------------------

type clients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

func (c clients) webapps(ns string) dynamic.ResourceInterface {
	return c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns)
}

// admin returns clients with the admin identity, unthrottled.
func admin(t *testing.T) clients {
	t.Helper()
	cfg := server(t).Config()
	cfg.QPS, cfg.Burst = -1, 0
	return clients{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
}

var nsCounter atomic.Int64

// newNamespace creates a namespace for t (never deleted: the server has no
// namespace controller).
func newNamespace(t *testing.T) string {
	t.Helper()
	name := fmt.Sprintf("%s-%d", dnsLabel(t.Name(), 40), nsCounter.Add(1))
	if _, err := admin(t).kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create namespace %s: %v", name, err)
	}
	return name
}

func dnsLabel(s string, max int) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('-')
		}
	}
	out := strings.Trim(b.String(), "-")
	if len(out) > max {
		out = strings.TrimRight(out[:max], "-")
	}
	return out
}

// operatorIdentity binds the shipped ClusterRole (example/config/rbac/
// role.yaml), changed by edit when not nil, to a user of its own and
// returns the user's name, its rest.Config (client certificate; it can do
// only what the role grants) and the role's name.
func operatorIdentity(t *testing.T, ns string, edit func(*rbacv1.ClusterRole)) (string, *rest.Config, string) {
	t.Helper()
	role, err := config.ClusterRole()
	if err != nil {
		t.Fatal(err)
	}
	user := "operator-" + ns
	role.Name = "webapp-operator-" + ns
	if edit != nil {
		edit(role)
	}
	kc := admin(t).kube
	if _, err := kc.RbacV1().ClusterRoles().Create(t.Context(), role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := kc.RbacV1().ClusterRoleBindings().Create(t.Context(), binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := server(t).UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the authorizer's cache knows the binding.
	uc := kubernetes.NewForConfigOrDie(cfg)
	poll(t, "the role binding to take effect", func(ctx context.Context) (bool, error) {
		_, err := uc.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		return err == nil, nil
	})
	return user, cfg, role.Name
}

// kubeconfigFor writes a kubeconfig for cfg and returns its path.
func kubeconfigFor(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

// --- WebApps ---------------------------------------------------------------

func siteName(i int) string { return fmt.Sprintf("site-%02d", i) }

func newWebApp(ns, name, image, content string) *v1alpha1.WebApp {
	r := int32(1)
	return &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.WebAppSpec{Image: image, Replicas: &r, Content: content},
	}
}

func createWebApp(t *testing.T, c clients, w *v1alpha1.WebApp) {
	t.Helper()
	u, err := v1alpha1.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.webapps(w.Namespace).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create WebApp %s: %v", w.Name, err)
	}
}

// createSites creates site-00 .. site-(n-1) with a valid image and content.
func createSites(t *testing.T, c clients, ns, content string) {
	t.Helper()
	for i := range n {
		createWebApp(t, c, newWebApp(ns, siteName(i), "nginx:1.27", content))
	}
}

// patchWebApp applies a JSON merge patch to WebApp ns/name.
func patchWebApp(t *testing.T, c clients, ns, name, patch string) {
	t.Helper()
	if _, err := c.webapps(ns).Patch(t.Context(), name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patch WebApp %s: %v", name, err)
	}
}

func listWebApps(ctx context.Context, c clients, ns string) (map[string]*v1alpha1.WebApp, error) {
	list, err := c.webapps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]*v1alpha1.WebApp{}
	for i := range list.Items {
		w, err := v1alpha1.FromUnstructured(&list.Items[i])
		if err != nil {
			return nil, err
		}
		out[w.Name] = w
	}
	return out, nil
}

// ready reports whether w's Ready condition is True for its generation.
func ready(w *v1alpha1.WebApp) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

// waitReady waits until every WebApp named is Ready for its generation and
// its ConfigMap holds its content.
func waitReady(t *testing.T, c clients, ns string, names []string, timeout time.Duration) map[string]*v1alpha1.WebApp {
	t.Helper()
	var got map[string]*v1alpha1.WebApp
	var missing []string
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		if got, err = listWebApps(ctx, c, ns); err != nil {
			return false, nil
		}
		cms, err := c.kube.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: webapp.LabelManagedBy + "=" + webapp.ManagedBy})
		if err != nil {
			return false, nil
		}
		content := map[string]string{}
		for _, cm := range cms.Items {
			for _, v := range cm.Data {
				content[cm.Labels[webapp.LabelInstance]] += v
			}
		}
		missing = missing[:0]
		for _, name := range names {
			w := got[name]
			if w == nil || !ready(w) || !strings.Contains(content[name], w.Spec.Content) {
				missing = append(missing, name)
			}
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		t.Fatalf("WebApps not ready: %v; %d not ready: %v", err, len(missing), missing)
	}
	return got
}

func sites(from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, siteName(i))
	}
	return out
}

func poll(t *testing.T, what string, cond func(ctx context.Context) (bool, error)) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, 90*time.Second, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}

// --- the operator in-process -----------------------------------------------

// inProcess is a webapp.Operator run by the test, with its own metrics
// registry, counted requests and captured logs.
type inProcess struct {
	*webapp.Operator
	reg      *prometheus.Registry
	requests *requestcount.Counter
	logs     *syncBuffer
	stop     func() // ends Run's context and waits for Run to return nil
}

// startInProcess runs the webapp operator on namespace ns with cfg's
// identity until stop (or the test's end).
func startInProcess(t *testing.T, cfg *rest.Config, ns string, workers int) *inProcess {
	t.Helper()
	counter := requestcount.New()
	cfg = counter.Wrap(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	logs := &syncBuffer{}
	reg := prometheus.NewRegistry()
	logger := log.With(log.NewLogfmtLogger(logs), "ts", log.DefaultTimestampUTC)
	rt, err := operator.New(operator.Config{RESTConfig: cfg, Name: webapp.DefaultName, Logger: logger, Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	op, err := webapp.New(webapp.Config{Operator: rt, Options: operator.FrameworkOptions{Namespace: ns, Workers: workers}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	select {
	case <-op.Booted():
	case err := <-done:
		cancel()
		t.Fatalf("Run returned before booting: %v", err)
	case <-time.After(60 * time.Second):
		cancel()
		t.Fatal("the operator did not boot within 60s")
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run returned %v, want nil", err)
				}
			case <-time.After(60 * time.Second):
				t.Errorf("Run did not return within 60s of its context ending")
			}
		})
	}
	t.Cleanup(stop)
	return &inProcess{Operator: op, reg: reg, requests: counter, logs: logs, stop: stop}
}

// metricSum sums the counter samples of name whose labels include labels.
func metricSum(t *testing.T, reg *prometheus.Registry, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			for k, v := range labels {
				found := false
				for _, lp := range m.GetLabel() {
					if lp.GetName() == k && lp.GetValue() == v {
						found = true
					}
				}
				if !found {
					continue metric
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

func (p *inProcess) reconciles(t *testing.T, result string) int {
	labels := map[string]string{}
	if result != "" {
		labels["result"] = result
	}
	return int(metricSum(t, p.reg, "operatorkit_framework_reconciliations_total", labels))
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// --- the operator binary ---------------------------------------------------

var build struct {
	once sync.Once
	path string
	err  error
}

// operatorBinary builds ./cmd/webapp-operator once and returns its path.
func operatorBinary(t *testing.T) string {
	t.Helper()
	build.once.Do(func() {
		build.path = filepath.Join(binDir, "webapp-operator")
		cmd := exec.Command("go", "build", "-o", build.path, "./cmd/webapp-operator")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("go build ./cmd/webapp-operator: %v\n%s", err, out)
		}
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// process is a running webapp-operator whose log lines are parsed as they
// come.
type process struct {
	*proctest.Process
	name string

	mu    sync.Mutex
	lines []logLine
}

// logLine is one logfmt line of the operator, with the time it was read.
type logLine struct {
	read time.Time
	kv   map[string]string
}

func (l logLine) ts() time.Time {
	ts, _ := time.Parse(time.RFC3339Nano, l.kv["ts"])
	return ts
}

// startBinary runs the operator binary with args.
func startBinary(t *testing.T, name string, args ...string) *process {
	t.Helper()
	p := &process{name: name}
	p.Process = proctest.Start(t, proctest.Config{Name: name, TailOnFailure: 40, OnLine: func(line string) {
		l := logLine{read: time.Now(), kv: parseLogfmt(line)}
		p.mu.Lock()
		p.lines = append(p.lines, l)
		p.mu.Unlock()
	}}, operatorBinary(t), args...)
	return p
}

// find returns the log lines whose msg is msg.
func (p *process) find(msg string) []logLine {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []logLine
	for _, l := range p.lines {
		if l.kv["msg"] == msg {
			out = append(out, l)
		}
	}
	return out
}

// waitFor waits until the process logged msg at least count times and
// returns those lines.
func (p *process) waitFor(t *testing.T, msg string, count int) []logLine {
	t.Helper()
	var got []logLine
	poll(t, fmt.Sprintf("%s to log %q %d times", p.name, msg, count), func(context.Context) (bool, error) {
		got = p.find(msg)
		select {
		case <-p.Done():
			if len(got) < count {
				return false, fmt.Errorf("%s exited", p.name)
			}
		default:
		}
		return len(got) >= count, nil
	})
	return got
}

// parseLogfmt parses one logfmt line: key=value pairs, values optionally
// double-quoted with backslash escapes.
func parseLogfmt(line string) map[string]string {
	kv := map[string]string{}
	for i := 0; i < len(line); {
		for i < len(line) && line[i] == ' ' {
			i++
		}
		start := i
		for i < len(line) && line[i] != '=' && line[i] != ' ' {
			i++
		}
		key := line[start:i]
		if i >= len(line) || line[i] != '=' {
			if key != "" {
				kv[key] = ""
			}
			continue
		}
		i++ // '='
		var val strings.Builder
		if i < len(line) && line[i] == '"' {
			i++
			for i < len(line) && line[i] != '"' {
				if line[i] == '\\' && i+1 < len(line) {
					i++
					switch line[i] {
					case 'n':
						val.WriteByte('\n')
					case 't':
						val.WriteByte('\t')
					default:
						val.WriteByte(line[i])
					}
				} else {
					val.WriteByte(line[i])
				}
				i++
			}
			i++ // closing quote
		} else {
			for i < len(line) && line[i] != ' ' {
				val.WriteByte(line[i])
				i++
			}
		}
		kv[key] = val.String()
	}
	return kv
}

// interval is one reconciliation of one object by one replica.
type interval struct {
	replica    string
	object     string
	start, end time.Time
	result     string
}

// reconciliations returns the process's reconciliations, from the
// framework's debug line "reconciled" (its ts is the end, its trace holds the
// duration).
func (p *process) reconciliations() []interval {
	var out []interval
	for _, l := range p.find("reconciled") {
		end := l.ts()
		fields := map[string]string{}
		for _, f := range strings.Fields(l.kv["trace"]) {
			if k, v, ok := strings.Cut(f, "="); ok {
				fields[k] = v
			}
		}
		d, _ := time.ParseDuration(fields["duration"])
		out = append(out, interval{replica: p.name, object: l.kv["object"], start: end.Add(-d), end: end, result: fields["result"]})
	}
	return out
}
