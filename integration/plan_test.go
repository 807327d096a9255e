package integration

import (
	"bytes"
	"context"
	"errors"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-kit/log"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	operatorpkg "github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/requestcount"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
	"github.com/operatorkit/operatorkit/router"
)

// planOps is configMapOps whose desired state fails, permanently or not,
// or panics, as the widget's spec.data.fail says.
type planOps struct{ *configMapOps }

func (o planOps) GetDesiredState(ctx context.Context, obj any) (any, error) {
	fail, _, _ := unstructured.NestedString(obj.(*unstructured.Unstructured).Object, "spec", "data", "fail")
	switch fail {
	case "permanent":
		return nil, retry.Permanent(errors.New("spec.data.fail: not a valid spec"))
	case "transient":
		return nil, errors.New("the backend is unavailable")
	case "panic":
		panic("nil spec field")
	}
	return o.configMapOps.GetDesiredState(ctx, obj)
}

// notCrud is a resource that cannot plan.
type notCrud struct{}

func (notCrud) Name() string                             { return "plain" }
func (notCrud) EnsureCreated(context.Context, any) error { panic("ran in a plan") }
func (notCrud) EnsureDeleted(context.Context, any) error { panic("ran in a plan") }

// countingProxy serves env's API to clients without credentials, counting
// every request by verb in counter.
func countingProxy(t *testing.T, counter *requestcount.Counter) string {
	t.Helper()
	cfg := counter.Wrap(env.Config())
	rt, err := rest.TransportFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	target, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport, proxy.FlushInterval = rt, -1 // watches stream
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestPlanCommandWritesNothing runs the plan command of an operator
// binary against the API server, over widgets in each state: its output
// and exit code, and that it sends no write.
func TestPlanCommandWritesNothing(t *testing.T) {
	// Not parallel: the Command redirects klog, which is the process's, to
	// its stderr while it runs (RedirectKlog), so a parallel test's
	// client-go lines (its leader elector's "Failed to renew lease") would
	// land in the plan's stderr, which must hold the plan's own lines only.
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	const name = "plantest"
	finalizer := framework.FinalizerPrefix + name
	widgets := widgetClient(t, ns)
	ctx := t.Context()
	create := func(name, version string, data map[string]string, finalizers ...string) {
		w := newWidget(ns, name, version, data)
		w.SetFinalizers(finalizers)
		createWidget(t, w)
	}
	create("a-new", "1", map[string]string{"k": "v"})
	create("b-noset", "9", nil)
	create("c-permanent", "1", map[string]string{"fail": "permanent"})
	create("d-transient", "1", map[string]string{"fail": "transient"})
	create("e-panic", "1", map[string]string{"fail": "panic"})
	create("f-deleting", "1", nil, finalizer, "example.com/keep")
	create("g-finalized", "1", nil, "example.com/keep")
	for _, n := range []string{"f-deleting", "g-finalized"} {
		if err := widgets.Delete(ctx, n, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// f-deleting's ConfigMap, which its delete chain would delete.
	cm := newConfigMapOps("configmap", "cm")
	cmObj, _ := cm.GetDesiredState(ctx, newWidget(ns, "f-deleting", "1", nil))
	if err := cm.ApplyCreateChange(ctx, nil, cmObj); err != nil {
		t.Fatal(err)
	}

	counter := requestcount.New()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+countingProxy(t, counter)+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := operatorpkg.Command{
		Name:    "widget-operator",
		Objects: "widgets",
		New: func(op *operatorpkg.Operator, fopts operatorpkg.FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			inf, err := op.Informer(informer.Config{GVR: widgetGVR, Namespace: fopts.Namespace})
			if err != nil {
				return nil, err
			}
			ops := planOps{&configMapOps{name: "configmap", suffix: "cm", client: op.Kubernetes()}}
			r, err := crud.New(crud.Config{Ops: ops})
			if err != nil {
				return nil, err
			}
			rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{resourceSet(t, "1", r, notCrud{})}})
			if err != nil {
				return nil, err
			}
			return op.NewFramework(framework.Config{Name: name, Informer: inf, ResourceRouter: rt, Resource: widgetGVR, DryRun: fopts.DryRun})
		},
	}
	run := func(args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := cmd.Run(ctx, append([]string{"plan", "--kubeconfig", kubeconfig, "--namespace", ns}, args...), &stdout, &stderr)
		// klog is one per process: while the command runs, its logger
		// also gets the client-go lines of the tests running beside it
		// (leader election, informers). The command's own lines are not
		// log lines.
		var own strings.Builder
		for l := range strings.Lines(stderr.String()) {
			if !strings.HasPrefix(l, "level=") {
				own.WriteString(l)
			}
		}
		return code, stdout.String(), own.String()
	}

	code, stdout, stderr := run("--all")
	for _, want := range []string{
		ns + "/a-new (resource set 1)\n  resource configmap\n    + create\n",
		"  resource plain\n    ? not a crud resource: cannot plan\n",
		ns + "/b-noset\n  stops: no resource set",
		ns + "/c-permanent (resource set 1)\n  stops: ",
		ns + "/d-transient (resource set 1)\n  stops: ",
		ns + "/e-panic (resource set 1)\n  stops: ",
		ns + "/f-deleting (resource set 1), being deleted\n  resource configmap\n    - delete\n",
		ns + "/g-finalized (resource set 1), being deleted\n  = skipped: ",
		"7 widgets planned, 2 to change; nothing was changed\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan --all output lacks %q", want)
		}
	}
	if code != 1 || !strings.HasPrefix(stderr, "widget-operator plan: plan "+ns+"/d-transient: ") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("plan --all: exit %d, stderr %q; want 1 and one line on the transient error", code, stderr)
	}

	code, stdout, stderr = run(ns+"/a-new", ns+"/c-permanent", ns+"/b-noset", ns+"/g-finalized")
	if code != 0 || stderr != "" || !strings.HasSuffix(stdout, "4 widgets planned, 1 to change; nothing was changed\n") {
		t.Errorf("plan of objects without a failure: exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
	code, _, stderr = run(ns + "/e-panic")
	if code != 1 || !strings.Contains(stderr, "panic") {
		t.Errorf("plan of a panicking resource: exit %d, stderr %q; want 1 naming the panic", code, stderr)
	}
	code, _, stderr = run(ns + "/zz-missing")
	if code != 1 || !strings.Contains(stderr, ns+"/zz-missing: not found") {
		t.Errorf("plan of a missing object: exit %d, stderr %q; want 1, not found", code, stderr)
	}

	got := counter.Snapshot()
	for verb := range got.ByVerb {
		switch verb {
		case requestcount.VerbGet, requestcount.VerbList, requestcount.VerbWatch, requestcount.VerbNonResource:
		default:
			t.Errorf("the plan commands sent %v; want reads only", got)
		}
	}
	if got.Writes != 0 || got.ByVerb[requestcount.VerbGet] == 0 {
		t.Errorf("the plan commands sent %v; want no write, and the ConfigMap reads of the plans", got)
	}
}

// TestPlanCommandByName: the plan command takes a cluster-scoped object by
// its name alone (a Framework over Namespaces here), and refuses the name
// alone of a namespaced object without --namespace, saying the form it
// wants; it refused every name alone, so that a cluster-scoped object
// could only be planned with --all.
func TestPlanCommandByName(t *testing.T) {
	// Not parallel: see TestPlanCommandWritesNothing.
	ensureWidgetCRD(t)
	ns := newNamespace(t)
	createWidget(t, newWidget(ns, "a", "1", nil))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+countingProxy(t, requestcount.New())+`"}}]
users: [{name: u, user: {}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	command := func(gvr schema.GroupVersionResource, objects string, fieldSelector func(namespace string) string) operatorpkg.Command {
		return operatorpkg.Command{
			Name:    "plan-by-name",
			Objects: objects,
			New: func(op *operatorpkg.Operator, fopts operatorpkg.FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
				inf, err := op.Informer(informer.Config{GVR: gvr, Namespace: fopts.Namespace, FieldSelector: fieldSelector(fopts.Namespace)})
				if err != nil {
					return nil, err
				}
				set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "all", Handles: func(any) bool { return true }, Resources: []resource.Interface{notCrud{}}})
				if err != nil {
					return nil, err
				}
				rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
				if err != nil {
					return nil, err
				}
				return op.NewFramework(framework.Config{Name: "plan-by-name", Informer: inf, ResourceRouter: rt, Resource: gvr, DryRun: fopts.DryRun})
			},
		}
	}
	run := func(cmd operatorpkg.Command, args ...string) (int, string, string) {
		var stdout, stderr bytes.Buffer
		code := cmd.Run(t.Context(), append([]string{"plan", "--kubeconfig", kubeconfig}, args...), &stdout, &stderr)
		var own strings.Builder // as in TestPlanCommandWritesNothing
		for l := range strings.Lines(stderr.String()) {
			if !strings.HasPrefix(l, "level=") {
				own.WriteString(l)
			}
		}
		return code, stdout.String(), own.String()
	}

	namespaces := command(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "namespaces", func(string) string { return "metadata.name=" + ns })
	code, stdout, stderr := run(namespaces, ns)
	if want := ns + " (resource set all)\n  resource plain\n    ? not a crud resource: cannot plan\n"; code != 0 || stderr != "" || !strings.HasPrefix(stdout, want) || !strings.HasSuffix(stdout, "1 namespaces planned, 0 to change; nothing was changed\n") {
		t.Errorf("plan of the cluster-scoped %s by name: exit %d, stderr %q, stdout\n%s\nwant 0 and its plan", ns, code, stderr, stdout)
	}

	widgets := command(widgetGVR, "widgets", func(string) string { return "" })
	code, _, stderr = run(widgets, "a")
	if want := `plan-by-name plan: invalid argument "a": widgets are namespaced: want namespace/name, or --namespace` + "\n"; code != 2 || stderr != want {
		t.Errorf("plan of a namespaced widget by name alone: exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
	code, stdout, stderr = run(widgets, "--namespace", ns, "a")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, ns+"/a (resource set all)\n") {
		t.Errorf("plan of widget a by name in --namespace: exit %d, stderr %q, stdout\n%s", code, stderr, stdout)
	}
}
