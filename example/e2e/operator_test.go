package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/example/config"
	"github.com/operatorkit/operatorkit/example/webapp"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/testenv"
)

// cluster is one API server with RBAC for the operator tests, started on
// first use.
var cluster struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

type clients struct {
	kube kubernetes.Interface
	dyn  dynamic.Interface
}

// startCluster returns the package's API server (RBAC on) with the WebApp CRD
// installed, and admin clients.
func startCluster(t *testing.T) (*testenv.Env, clients) {
	t.Helper()
	cluster.once.Do(func() {
		// The first build (minutes, once per machine) has no deadline; the start does.
		if _, cluster.err = testenv.Build(context.Background(), os.Stderr); cluster.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		// The WebApp CRD as controller-gen wrote it, served when Start returns.
		cluster.env, cluster.err = testenv.Start(ctx, testenv.Options{RBAC: true, CRDs: []string{"../config/crd"}})
	})
	if cluster.err != nil {
		t.Fatalf("start API server: %v", cluster.err)
	}
	cfg := cluster.env.Config()
	cfg.QPS, cfg.Burst = -1, 0
	return cluster.env, clients{kube: kubernetes.NewForConfigOrDie(cfg), dyn: dynamic.NewForConfigOrDie(cfg)}
}

func stopCluster() {
	if cluster.env != nil {
		cluster.env.Stop()
	}
}

// namespace creates a namespace for one test (the server never finishes
// deleting namespaces, so none is deleted).
func namespace(t *testing.T, c clients, name string) string {
	t.Helper()
	// A generated name: the package's API server outlives one count of
	// go test -count=N.
	ns, err := c.kube.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// grant binds the shipped ClusterRole to user.
func grant(t *testing.T, c clients, user string) {
	t.Helper()
	role, err := config.ClusterRole()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := c.kube.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	}
	if _, err := c.kube.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func userKubeconfig(t *testing.T, env *testenv.Env, user string) string {
	t.Helper()
	cfg, err := env.UserConfig(user)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := testenv.WriteKubeconfig(path, cfg); err != nil {
		t.Fatal(err)
	}
	return path
}

func createWebApp(t *testing.T, c clients, ns, name, release, image, content string) {
	t.Helper()
	n := int32(2)
	w := &v1alpha1.WebApp{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.WebAppSpec{Image: image, Replicas: &n, Content: content},
	}
	if release != "" {
		w.Labels = map[string]string{webapp.LabelRelease: release}
	}
	u, err := v1alpha1.ToUnstructured(w)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Create(t.Context(), u, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func getWebApp(ctx context.Context, c clients, ns, name string) (*v1alpha1.WebApp, error) {
	u, err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return v1alpha1.FromUnstructured(u)
}

// children counts the operator's ConfigMaps, Deployments and Services of the
// WebApp name.
func children(ctx context.Context, c clients, ns, name string) (int, error) {
	sel := metav1.ListOptions{LabelSelector: labels.Set{webapp.LabelInstance: name}.String()}
	cms, err := c.kube.CoreV1().ConfigMaps(ns).List(ctx, sel)
	if err != nil {
		return 0, err
	}
	deps, err := c.kube.AppsV1().Deployments(ns).List(ctx, sel)
	if err != nil {
		return 0, err
	}
	svcs, err := c.kube.CoreV1().Services(ns).List(ctx, sel)
	if err != nil {
		return 0, err
	}
	return len(cms.Items) + len(deps.Items) + len(svcs.Items), nil
}

func ready(w *v1alpha1.WebApp) bool {
	c := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == w.Generation
}

// TestOperatorUnderMinimalRole runs the webapp-operator binary with only the
// shipped ClusterRole (RBAC on): valid WebApps of both releases converge, an
// invalid one is reported Stalled with an event, deletes remove children,
// the content never reaches the logs, and SIGTERM ends it with exit code 0.
func TestOperatorUnderMinimalRole(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	bin := build(t, "webapp-operator")
	env, c := startCluster(t)
	ctx := contextFor(t)
	ns := namespace(t, c, "minimal-role")
	grant(t, c, "webapp-operator")
	kubeconfig := userKubeconfig(t, env, "webapp-operator")

	const secret = "TOP-SECRET-CONTENT-d41d8cd9"
	for i := 0; i < 6; i++ {
		createWebApp(t, c, ns, fmt.Sprintf("site-%d", i), []string{"", "1", "2"}[i%3], "nginx:1.27", secret)
	}
	createWebApp(t, c, ns, "broken", "", "Not A Valid Image", secret)

	p := start(t, bin, []string{
		"--kubeconfig", kubeconfig, "--namespace", ns, "--leader-election-namespace", ns,
		"--metrics-bind-address", "127.0.0.1:0", "--log-level", "debug", "--workers", "2",
	}, nil)

	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		for i := 0; i < 6; i++ {
			w, err := getWebApp(ctx, c, ns, fmt.Sprintf("site-%d", i))
			if err != nil || !ready(w) {
				return false, nil
			}
			n, err := children(ctx, c, ns, w.Name)
			if want := map[bool]int{true: 3, false: 2}[i%3 == 2]; err != nil || n != want {
				return false, nil
			}
		}
		w, err := getWebApp(ctx, c, ns, "broken")
		if err != nil {
			return false, nil
		}
		d := meta.FindStatusCondition(w.Status.Conditions, v1alpha1.ConditionStalled)
		if d == nil || d.Status != metav1.ConditionTrue || d.Reason != webapp.ReasonInvalidSpec || !strings.Contains(d.Message, "not a valid image reference") {
			return false, nil
		}
		events, err := c.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=broken"})
		if err != nil {
			return false, nil
		}
		for _, e := range events.Items {
			if e.Type == corev1.EventTypeWarning && strings.Contains(e.Message, "not a valid image reference") {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("WebApps did not converge under the minimal role: %v", err)
	}

	// Fixing the spec recovers the broken WebApp.
	fix := []byte(`{"spec":{"image":"nginx:1.27"}}`)
	if _, err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Patch(ctx, "broken", "application/merge-patch+json", fix, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	// Deleting removes children through the chain and the finalizer.
	for _, name := range []string{"site-0", "site-2"} {
		if err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		w, err := getWebApp(ctx, c, ns, "broken")
		if err != nil || !ready(w) {
			return false, nil
		}
		for _, name := range []string{"site-0", "site-2"} {
			if _, err := getWebApp(ctx, c, ns, name); !apierrors.IsNotFound(err) {
				return false, nil
			}
			if n, err := children(ctx, c, ns, name); err != nil || n != 0 {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("recovery or deletes not processed: %v", err)
	}

	p.Signal(t, syscall.SIGTERM)
	if code := p.ExitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("exit code after SIGTERM = %d, want 0", code)
	}
	out := p.Output()
	if strings.Contains(out, secret) {
		t.Error("the operator logged a WebApp's content")
	}
	for _, forbidden := range []string{"Forbidden", "forbidden"} {
		if strings.Contains(out, forbidden) {
			t.Errorf("the operator hit a permission error under its own role:\n%s", out)
		}
	}
	if !strings.Contains(out, `msg="stopped cleanly"`) {
		t.Error("no clean stop logged")
	}
}

// TestOperatorWithoutPermissions: an identity without the role gets one line
// naming the missing permissions and exit code 1, before anything runs.
func TestOperatorWithoutPermissions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	bin := build(t, "webapp-operator")
	env, _ := startCluster(t)
	kubeconfig := userKubeconfig(t, env, "nobody")
	p := start(t, bin, []string{"--kubeconfig", kubeconfig, "--namespace", "anywhere", "--metrics-bind-address", "127.0.0.1:0"}, nil)
	if code := p.ExitCode(t, 60*time.Second); code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	out := strings.TrimSpace(p.Output())
	if strings.Count(out, "\n") != 0 || !strings.HasPrefix(out, "webapp-operator: missing permissions: ") ||
		!strings.Contains(out, `patch webapps.example.operatorkit.io/status in namespace "anywhere"`) {
		t.Fatalf("output = %q, want one line naming the missing permissions", out)
	}
}

// TestOperatorRunLeavesNoGoroutines runs the operator code in-process and
// checks that Run returns nil when its context ends and leaves no goroutine
// behind.
func TestOperatorRunLeavesNoGoroutines(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, c := startCluster(t)
	ns := namespace(t, c, "no-leak")
	for i := 0; i < 3; i++ {
		createWebApp(t, c, ns, fmt.Sprintf("site-%d", i), "", "nginx:1.27", "hello")
	}
	before := goleak.IgnoreCurrent()

	rt, err := operator.New(operator.Config{RESTConfig: env.Config(), Name: webapp.DefaultName})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := webapp.New(webapp.Config{Operator: rt, Options: operator.FrameworkOptions{Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(contextFor(t))
	done := make(chan error, 1)
	go func() { done <- rt.Run(ctx) }()
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		for i := 0; i < 3; i++ {
			w, err := getWebApp(ctx, c, ns, fmt.Sprintf("site-%d", i))
			if err != nil || !ready(w) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("not converged: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run() = %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
	goleak.VerifyNone(t, before,
		// Idle keep-alive connections of the shared client-go transport.
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
	)
}

// TestShardedReplicas runs two webapp-operator processes with --shard under
// the shipped ClusterRole: every WebApp is labelled for one of them and
// converges, both get a share, and when one stops (SIGTERM) the other takes
// its WebApps at once and reconciles a change to them.
func TestShardedReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	bin := build(t, "webapp-operator")
	env, c := startCluster(t)
	ctx := contextFor(t)
	ns := namespace(t, c, "sharded")
	grant(t, c, "webapp-sharded")
	kubeconfig := userKubeconfig(t, env, "webapp-sharded")
	const n = 12
	for i := range n {
		createWebApp(t, c, ns, fmt.Sprintf("site-%d", i), "", "nginx:1.27", "hello")
	}
	args := func(identity string) []string {
		return []string{
			"--kubeconfig", kubeconfig, "--namespace", ns, "--leader-election-namespace", ns,
			"--metrics-bind-address", "127.0.0.1:0", "--workers", "2", "--shard", "--shard-identity", identity,
		}
	}
	p1 := start(t, bin, args("r1"), nil)
	p2 := start(t, bin, args("r2"), nil)
	shardLabel := operator.ShardLabelPrefix + "webapp-operator"

	// childShards returns the shard labels of the children of WebApp name
	// (of release 1: a ConfigMap and a Deployment).
	childShards := func(ctx context.Context, name string) []string {
		var shards []string
		for _, get := range []func() (metav1.Object, error){
			func() (metav1.Object, error) {
				return c.kube.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
			},
			func() (metav1.Object, error) {
				return c.kube.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			},
		} {
			obj, err := get()
			if err != nil {
				return nil
			}
			shards = append(shards, obj.GetLabels()[shardLabel])
		}
		return shards
	}
	// owned waits until every WebApp is ready and labelled for one of ids,
	// with its children carrying the same shard label (ShardChildren), and
	// returns the WebApps by owner.
	owned := func(what string, ids ...string) map[string][]string {
		t.Helper()
		var by map[string][]string
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
			by = map[string][]string{}
			for i := range n {
				w, err := getWebApp(ctx, c, ns, fmt.Sprintf("site-%d", i))
				if err != nil || !ready(w) {
					return false, nil
				}
				owner := w.Labels[shardLabel]
				if !slices.Contains(ids, owner) || !slices.Equal(childShards(ctx, w.Name), []string{owner, owner}) {
					return false, nil
				}
				by[owner] = append(by[owner], w.Name)
			}
			return true, nil
		})
		if err != nil {
			t.Fatalf("%s: %v (by owner so far: %v)\n--- r1:\n%s\n--- r2:\n%s", what, err, by, p1.Output(), p2.Output())
		}
		return by
	}
	by := owned("every WebApp ready with an owner", "r1", "r2")
	if len(by["r1"]) == 0 || len(by["r2"]) == 0 {
		t.Errorf("WebApps by owner = %v, want both replicas to have a share", by)
	}

	p1.Signal(t, syscall.SIGTERM)
	if code := p1.ExitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("r1: exit code after SIGTERM = %d, want 0\n%s", code, p1.Output())
	}
	owned("r2 to own every WebApp after r1 stopped", "r2")
	if len(by["r1"]) > 0 {
		// A change to one of r1's former WebApps is reconciled by r2.
		name := by["r1"][0]
		patch := []byte(`{"spec":{"image":"nginx:1.28"}}`)
		if _, err := c.dyn.Resource(v1alpha1.GroupVersionResource).Namespace(ns).Patch(ctx, name, "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		owned("r2 to reconcile a change to "+name, "r2")
	}
	p2.Signal(t, syscall.SIGTERM)
	if code := p2.ExitCode(t, 30*time.Second); code != 0 {
		t.Fatalf("r2: exit code after SIGTERM = %d, want 0\n%s", code, p2.Output())
	}
	for id, out := range map[string]string{"r1": p1.Output(), "r2": p2.Output()} {
		if strings.Contains(out, "orbidden") {
			t.Errorf("%s hit a permission error under the shipped role:\n%s", id, out)
		}
		if !strings.Contains(out, `msg="left the ring"`) {
			t.Errorf("%s did not leave the ring cleanly:\n%s", id, out)
		}
	}
}
