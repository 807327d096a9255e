package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"
	"go.uber.org/goleak"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

var things = schema.GroupVersionResource{Group: "test.operatorkit.io", Version: "v1", Resource: "things"}

// apiServer serves a list of namespaced things (and a watch that sends
// nothing) the way an API server does, for informers; it counts the other
// requests.
func apiServer(t *testing.T, names ...string) (*rest.Config, *int, func()) {
	t.Helper()
	return thingsServer(t, true, names...)
}

// thingsServer is apiServer with things namespaced or cluster-scoped (names
// without a namespace), as its discovery says (which is not counted).
func thingsServer(t *testing.T, namespaced bool, names ...string) (*rest.Config, *int, func()) {
	t.Helper()
	others := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/apis/"+things.GroupVersion().String() {
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(metav1.APIResourceList{
				TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
				GroupVersion: things.GroupVersion().String(),
				APIResources: []metav1.APIResource{{Name: "things", Namespaced: namespaced, Kind: "Thing", Verbs: metav1.Verbs{"get", "list", "watch"}}},
			})
			return
		}
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/things") {
			*others++
			http.Error(w, "unexpected", http.StatusMethodNotAllowed)
			return
		}
		var items []map[string]any
		for _, n := range names {
			ns, name, ok := strings.Cut(n, "/")
			if !ok {
				ns, name = "", n
			}
			items = append(items, map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "Thing",
				"metadata": map[string]any{"namespace": ns, "name": name, "resourceVersion": "1", "labels": map[string]any{"v": "1"}}})
		}
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Query().Get("watch") != "true" {
			_ = json.NewEncoder(w).Encode(map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "ThingList",
				"metadata": map[string]any{"resourceVersion": "1"}, "items": items})
			return
		}
		w.WriteHeader(http.StatusOK)
		if r.URL.Query().Get("sendInitialEvents") == "true" { // a streaming list
			enc := json.NewEncoder(w)
			for _, item := range items {
				_ = enc.Encode(map[string]any{"type": "ADDED", "object": item})
			}
			_ = enc.Encode(map[string]any{"type": "BOOKMARK", "object": map[string]any{"apiVersion": "test.operatorkit.io/v1", "kind": "Thing",
				"metadata": map[string]any{"resourceVersion": "1", "annotations": map[string]any{"k8s.io/initial-events-end": "true"}}}})
		}
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL}, others, srv.Close
}

// changeOps plans an update of every object, except that the chain of an
// object named "waiting" waits; it must never apply.
type changeOps struct{}

func (changeOps) Name() string                                      { return "thing" }
func (changeOps) GetCurrentState(context.Context, any) (any, error) { return nil, nil }
func (changeOps) GetDesiredState(context.Context, any) (any, error) { return "desired", nil }
func (changeOps) NewUpdatePatch(ctx context.Context, obj, _, desired any) (*crud.Patch, error) {
	p := crud.NewPatch()
	if o, ok := obj.(metav1.Object); ok && o.GetName() == "waiting" {
		conditioncontext.Set(ctx, conditioncontext.Reconciling, metav1.ConditionTrue, "Waiting", "thing ns/waiting is not ready")
		reconciliationcanceledcontext.SetCanceled(ctx)
		return p, nil
	}
	p.SetUpdateChange(desired)
	return p, nil
}
func (changeOps) NewDeletePatch(context.Context, any, any, any) (*crud.Patch, error) {
	return crud.NewPatch(), nil
}
func (changeOps) ApplyCreateChange(context.Context, any, any) error { panic("applied in a plan") }
func (changeOps) ApplyUpdateChange(context.Context, any, any) error { panic("applied in a plan") }
func (changeOps) ApplyDeleteChange(context.Context, any, any) error { panic("applied in a plan") }

// planFramework adds a dry-run Framework over things, whose one set "v1"
// handles label v=1, to o.
func planFramework(t *testing.T, o *Operator) *framework.Framework {
	t.Helper()
	config := thingsConfig(t, o)
	config.DryRun = true
	f, err := o.NewFramework(config)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// thingsConfig returns the framework.Config of a Framework over things on
// o's informer, whose one set "v1" handles label v=1.
// thingsFramework returns a new Operator named "x" (not run) and the
// Framework of thingsConfig added to it.
func thingsFramework(t *testing.T) (*Operator, *framework.Framework) {
	t.Helper()
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	f, err := o.NewFramework(thingsConfig(t, o))
	if err != nil {
		t.Fatal(err)
	}
	return o, f
}

func thingsConfig(t *testing.T, o *Operator) framework.Config {
	t.Helper()
	inf, err := o.Informer(informer.Config{GVR: things})
	if err != nil {
		t.Fatal(err)
	}
	r, err := crud.New(crud.Config{Ops: changeOps{}})
	if err != nil {
		t.Fatal(err)
	}
	set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: router.LabelIs("v", "1", false), Resources: []resource.Interface{r}})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
	if err != nil {
		t.Fatal(err)
	}
	return framework.Config{Name: "things", Informer: inf, ResourceRouter: rt, Resource: things}
}

func TestPlan(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	cfg, others, stop := apiServer(t, "ns/b", "ns/a", "other/c")
	o, err := New(Config{RESTConfig: cfg, Name: "plan"})
	if err != nil {
		t.Fatal(err)
	}
	f := planFramework(t, o)
	plans, err := o.Plan(t.Context(), PlanConfig{Framework: f})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range plans {
		if p.ResourceSet != "v1" || !p.Changes() || p.Err != nil {
			t.Errorf("plan of %s = %+v, want a change under v1", p.Object, p)
		}
		got = append(got, p.Object)
	}
	if strings.Join(got, " ") != "ns/a ns/b other/c" {
		t.Fatalf("planned %v, want every object sorted by key", got)
	}
	if *others != 0 {
		t.Fatalf("%d requests other than lists and watches of things", *others)
	}
	if _, err := o.Plan(t.Context(), PlanConfig{Framework: f}); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("second Plan() = %v, want ErrAlreadyStarted", err)
	}
	if err := o.Run(t.Context()); !errors.Is(err, ErrAlreadyStarted) {
		t.Fatalf("Run() after Plan = %v, want ErrAlreadyStarted", err)
	}
	stop() // the test server's own goroutines
	goleak.VerifyNone(t, ignore, goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"), goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"))
}

func TestPlanKeys(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a", "ns/b")
	tests := []struct {
		name    string
		config  func(f *framework.Framework) PlanConfig
		want    string
		wantErr error
	}{
		{name: "named, in the order given", config: func(f *framework.Framework) PlanConfig {
			return PlanConfig{Framework: f, Keys: []string{"ns/b", "ns/a"}}
		}, want: "ns/b ns/a"},
		{name: "unknown key", config: func(f *framework.Framework) PlanConfig {
			return PlanConfig{Framework: f, Keys: []string{"ns/a", "ns/zz"}}
		}, want: "ns/a", wantErr: ErrNotFound},
		{name: "unknown resource set", config: func(f *framework.Framework) PlanConfig {
			return PlanConfig{Framework: f, Keys: []string{"ns/a"}, ResourceSet: "v9"}
		}, want: "ns/a"},
		{name: "no framework", config: func(*framework.Framework) PlanConfig { return PlanConfig{} }, wantErr: ErrInvalidConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := New(Config{RESTConfig: cfg, Name: "plan"})
			if err != nil {
				t.Fatal(err)
			}
			plans, err := o.Plan(t.Context(), tt.config(planFramework(t, o)))
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Plan() error = %v, want %v", err, tt.wantErr)
			}
			var got []string
			for _, p := range plans {
				got = append(got, p.Object)
				if tt.name == "unknown resource set" && !errors.Is(p.Err, framework.ErrNoResourceSet) {
					t.Errorf("plan of %s under v9: Err = %v, want ErrNoResourceSet", p.Object, p.Err)
				}
			}
			if strings.Join(got, " ") != tt.want {
				t.Fatalf("planned %v, want %s", got, tt.want)
			}
		})
	}
}

func TestNewFramework(t *testing.T) {
	o, err := New(Config{RESTConfig: restConfig(), Name: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// Conditions need a Client, finalizers a Client, a CRD a CRDClient: the
	// Operator's are used.
	config := thingsConfig(t, o)
	config.Conditions = true
	f, err := o.NewFramework(config)
	if err != nil {
		t.Fatalf("NewFramework() = %v", err)
	}
	if len(o.frameworks) != 1 || o.frameworks[0] != f {
		t.Fatal("NewFramework did not add the Framework")
	}
	if _, err := o.NewFramework(framework.Config{Informer: config.Informer, ResourceRouter: config.ResourceRouter}); !errors.Is(err, framework.ErrInvalidConfig) {
		t.Fatalf("NewFramework(no name) = %v, want framework.ErrInvalidConfig", err)
	}
}

func TestCommand(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a", "ns/b", "ns/waiting")
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, cfg.Host); err != nil {
		t.Fatal(err)
	}
	missing := t.TempDir() + "/missing.kubeconfig"
	checked := 0
	cmd := Command{
		Name: "thing-operator", Summary: "Runs the thing operator.", Objects: "things",
		Check: func(_ context.Context, _ *rest.Config, _ Options, fopts FrameworkOptions) error {
			checked++
			if fopts.Namespace == "forbidden" {
				return errors.New("missing permissions:\nlist things")
			}
			return nil
		},
		New: func(op *Operator, _ FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			return planFramework(t, op), nil
		},
		SetFlag: "release", Sets: map[string]string{"1": "v1", "2": "v2"},
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		stdout   string // substring
		stderr   string // substring of the one line on stderr; "" for none
	}{
		{name: "help", args: []string{"-h"}, stdout: "usage: thing-operator [flags]"},
		{name: "help on the Lease's namespace", args: []string{"-h"}, stdout: "namespace of the leader election Lease (default: --namespace if set, else the pod's namespace"},
		{name: "plan help", args: []string{"plan", "--help"}, stdout: "usage: thing-operator plan [flags]"},
		{name: "bad flag", args: []string{"--workers", "0"}, wantCode: 2, stderr: "thing-operator: invalid value 0 for flag --workers: must be at least 1"},
		{name: "unknown flag", args: []string{"--frobnicate"}, wantCode: 2, stderr: "flag provided but not defined: -frobnicate"},
		{name: "stray argument", args: []string{"serve"}, wantCode: 2, stderr: `unexpected argument "serve"`},
		{name: "plan after flags", args: []string{"--kubeconfig", kubeconfig, "plan", "--all"}, wantCode: 2, stderr: "thing-operator: plan comes first, before its flags: thing-operator plan [flags] (namespace/name... | --all)"},
		{name: "shard without ShardResources", args: []string{"--shard"}, wantCode: 2, stderr: "thing-operator: flag --shard: thing-operator does not shard (its Command has no ShardResources)"},
		{name: "check fails", args: []string{"--kubeconfig", kubeconfig, "--namespace", "forbidden", "--metrics-bind-address", "0", "--leader-elect=false"}, wantCode: 1, stderr: "thing-operator: missing permissions: list things"},
		{name: "bad namespace", args: []string{"--namespace", "Apps_1", "--kubeconfig", missing}, wantCode: 2, stderr: `thing-operator: invalid value "Apps_1" for flag --namespace: a lowercase RFC 1123 label`},
		{name: "plan outside --namespace", args: []string{"plan", "--kubeconfig", kubeconfig, "--namespace", "other", "ns/a"}, wantCode: 2, stderr: `thing-operator plan: invalid argument "ns/a": not in --namespace other`},
		{name: "plan without objects", args: []string{"plan"}, wantCode: 2, stderr: "name the things to plan"},
		{name: "plan bad key", args: []string{"plan", "ns/a/b"}, wantCode: 2, stderr: `invalid argument "ns/a/b": want namespace/name, or name for cluster-scoped things`},
		{name: "plan a name without its namespace", args: []string{"plan", "--kubeconfig", kubeconfig, "a"}, wantCode: 2, stderr: `thing-operator plan: invalid argument "a": things are namespaced: want namespace/name, or --namespace`},
		{name: "plan a name in --namespace", args: []string{"plan", "--kubeconfig", kubeconfig, "--namespace", "ns", "b"}, stdout: "ns/b (resource set v1)\n  resource thing\n    ~ update\n        \"desired\"\n\n1 things planned, 1 to change; nothing was changed\n"},
		{name: "plan bad namespace", args: []string{"plan", "--kubeconfig", kubeconfig, "--namespace", "Bad_NS", "--all"}, wantCode: 2, stderr: `thing-operator plan: invalid value "Bad_NS" for flag --namespace: a lowercase RFC 1123 label`},
		{name: "plan bad set", args: []string{"plan", "--release", "3", "--all"}, wantCode: 2, stderr: `invalid value "3" for flag -release: want 1 or 2`},
		{name: "plan all", args: []string{"plan", "--kubeconfig", kubeconfig, "--all"}, stdout: "ns/b (resource set v1)\n  resource thing\n    ~ update\n        \"desired\"\n\nns/waiting (resource set v1)\n  resource thing\n    … waits: thing ns/waiting is not ready\n\n3 things planned, 2 to change, 1 waiting; nothing was changed\n"},
		{name: "plan under a set", args: []string{"plan", "--kubeconfig", kubeconfig, "--release", "2", "ns/a"}, stdout: "ns/a\n  stops: no resource set"},
		{name: "plan missing object", args: []string{"plan", "--kubeconfig", kubeconfig, "ns/zz"}, wantCode: 1, stderr: "thing-operator plan: ns/zz: not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := cmd.Run(t.Context(), tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stdout.String(), tt.stdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout.String(), tt.stdout)
			}
			if tt.stderr == "" {
				return
			}
			// Besides the failure, stderr has the log lines (logfmt, level
			// first), such as client-go's when a plan stops its watches.
			var lines []string
			for _, l := range strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n") {
				if !strings.HasPrefix(l, "level=") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], tt.stderr) {
				t.Errorf("stderr = %q, want one line (besides log lines) containing %q", stderr.String(), tt.stderr)
			}
		})
	}
	if checked != 6 {
		t.Errorf("Check ran %d times, want 6 (once per command that reached the cluster)", checked)
	}
}

// TestCommandValidates: a Command its author got wrong fails every run,
// plan's too, with exit code 1 and a line naming the field, instead of
// blaming a flag or panicking in the flag package.
func TestCommandValidates(t *testing.T) {
	newFramework := func(*Operator, FrameworkOptions, log.Logger) (*framework.Framework, error) {
		return nil, errors.New("not reached")
	}
	sets := map[string]string{"1": "v1"}
	tests := []struct {
		name   string
		cmd    Command
		stderr string
	}{
		{"Name", Command{New: newFramework}, "operator: invalid config: operator.Command.Name must not be empty"},
		{"New", Command{Name: "op"}, "op: invalid config: operator.Command.New must not be empty"},
		{"Sets without SetFlag", Command{Name: "op", New: newFramework, Sets: sets}, "op: invalid config: operator.Command.Sets needs SetFlag"},
		{"SetFlag without Sets", Command{Name: "op", New: newFramework, SetFlag: "release"}, `op: invalid config: operator.Command.SetFlag "release" needs Sets`},
		{"SetFlag a flag of plan", Command{Name: "op", New: newFramework, SetFlag: "namespace", Sets: sets}, `op: invalid config: operator.Command.SetFlag "namespace" is a flag of plan already`},
		{"SetFlag a client flag of plan", Command{Name: "op", New: newFramework, SetFlag: "v", Sets: sets}, `operator.Command.SetFlag "v" is a flag of plan already`},
		{"SetFlag no flag name", Command{Name: "op", New: newFramework, SetFlag: "-release", Sets: sets}, `operator.Command.SetFlag "-release" is not a flag name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, args := range [][]string{nil, {"plan", "--all"}} {
				var stdout, stderr bytes.Buffer
				if code := tt.cmd.Run(t.Context(), args, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), tt.stderr) {
					t.Errorf("Run(%q) = %d, stderr %q; want 1 and %q", args, code, stderr.String(), tt.stderr)
				}
			}
		})
	}
}

// TestCommandPlanClusterScoped: plan takes the plain names of cluster-scoped
// objects (their keys); it refused every argument but namespace/name, so
// that a cluster-scoped object could only be planned with --all.
func TestCommandPlanClusterScoped(t *testing.T) {
	cfg, _, _ := thingsServer(t, false, "a", "b")
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, cfg.Host); err != nil {
		t.Fatal(err)
	}
	cmd := Command{
		Name: "thing-operator", Objects: "things",
		New: func(op *Operator, _ FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			return planFramework(t, op), nil
		},
	}
	var stdout, stderr bytes.Buffer
	if code := cmd.Run(t.Context(), []string{"plan", "--kubeconfig", kubeconfig, "b"}, &stdout, &stderr); code != 0 {
		t.Fatalf("plan b: exit code = %d, want 0 (stderr %q)", code, stderr.String())
	}
	if want := "b (resource set v1)\n  resource thing\n    ~ update\n        \"desired\"\n\n1 things planned, 1 to change; nothing was changed\n"; stdout.String() != want {
		t.Errorf("plan b: stdout = %q, want %q", stdout.String(), want)
	}
}

// TestCommandPlanRedirectsKlog: plan sends client-go's log lines to its
// logger, as the operator does, so that they follow --log-format and
// --log-level: with -v=3 the reflector's V(3) "Starting reflector" is a
// JSON debug line on the command's stderr at --log-level=debug, and is not
// written at --log-level=info.
func TestCommandPlanRedirectsKlog(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a")
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, cfg.Host); err != nil {
		t.Fatal(err)
	}
	setKlogVerbosity(t, 0) // -v=3 below; back to 0 after the test
	cmd := Command{
		Name: "thing-operator",
		New: func(op *Operator, _ FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			return planFramework(t, op), nil
		},
	}
	for _, lvl := range []string{"debug", "info"} {
		var stdout, stderr bytes.Buffer
		args := []string{"plan", "--kubeconfig", kubeconfig, "--log-format=json", "--log-level=" + lvl, "-v=3", "--all"}
		if code := cmd.Run(t.Context(), args, &stdout, &stderr); code != 0 {
			t.Fatalf("%v: exit code = %d, want 0 (stderr %q)", args, code, stderr.String())
		}
		var found []map[string]string
		for _, r := range parseLines(t, "json", stderr.String()) {
			if r.values["msg"] == "Starting reflector" {
				found = append(found, r.values)
			}
		}
		switch {
		case lvl == "info" && len(found) > 0:
			t.Errorf("at --log-level=info, stderr has client-go's debug lines %v", found)
		case lvl == "debug" && len(found) == 0:
			t.Errorf("at --log-level=debug, stderr = %q, want client-go's \"Starting reflector\" as a JSON line", stderr.String())
		case lvl == "debug":
			if r := found[0]; r["level"] != "debug" || r["v"] != "3" || !strings.HasPrefix(r["caller"], "reflector.go:") {
				t.Errorf("client-go's line = %v, want level debug, v 3 and the caller in reflector.go", r)
			}
		}
	}
}

// writeKubeconfig writes a kubeconfig for the API server at host.
func writeKubeconfig(path, host string) error {
	return os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+host+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600)
}

// TestCommandShard: --shard gives the Operator a Sharding over the
// Command's ShardResources, with the identity of --shard-identity.
func TestCommandShard(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a")
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, cfg.Host); err != nil {
		t.Fatal(err)
	}
	cmd := Command{
		Name: "thing-operator",
		New: func(op *Operator, _ FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			return planFramework(t, op), nil
		},
		ShardResources: []schema.GroupVersionResource{thingsGVR},
	}
	var stdout, stderr bytes.Buffer
	missing := t.TempDir() + "/missing.kubeconfig"
	if code := cmd.Run(t.Context(), []string{"--shard", "--dry-run", "--kubeconfig", missing}, &stdout, &stderr); code != 2 ||
		stderr.String() != "thing-operator: flag --shard writes the shard label onto the objects: not with --dry-run\n" {
		t.Errorf("--shard --dry-run: exit %d, stderr %q; want 2 and the one line naming both flags", code, stderr.String())
	}
	opts := Options{Kubeconfig: kubeconfig, Shard: true, ShardIdentity: "pod-1"}
	op, _, err := cmd.operator(t.Context(), opts, FrameworkOptions{}, cmd.Name, log.NewNopLogger())
	if err != nil {
		t.Fatal(err)
	}
	if op.shard == nil || op.shard.cfg.Identity != "pod-1" || len(op.shard.cfg.Resources) != 1 || op.shard.cfg.Resources[0] != thingsGVR {
		t.Fatalf("sharding = %+v, want identity pod-1 over %s", op.shard, thingsGVR)
	}
	opts.Shard = false
	if op, _, err := cmd.operator(t.Context(), opts, FrameworkOptions{}, cmd.Name, log.NewNopLogger()); err != nil || op.shard != nil {
		t.Errorf("without --shard: sharding = %+v (err %v), want none", op.shard, err)
	}
}

// TestPlanBoundsTheCacheSync: a cache that never syncs (the resource is not
// served) ends Plan after Config.CacheSyncTimeout with an error naming the
// informer, as it ends Run; Plan waited until its context ended, so that
// the plan command of a cluster without the CRD waited for ever.
func TestPlanBoundsTheCacheSync(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404}`, http.StatusNotFound)
	}))
	defer srv.Close()
	o, err := New(Config{RESTConfig: &rest.Config{Host: srv.URL}, Name: "plan", CacheSyncTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	_, err = o.Plan(ctx, PlanConfig{Framework: planFramework(t, o)})
	if ctx.Err() != nil || !errors.Is(err, informer.ErrNotSynced) || !strings.Contains(err.Error(), "CacheSyncTimeout") {
		t.Fatalf("Plan() over a resource not served = %v (context: %v); want informer.ErrNotSynced after CacheSyncTimeout, before the context ends", err, ctx.Err())
	}
}

// TestCommandFailureLineWhileClientGoLogs: a Command's failure line and the
// lines its logger writes from other goroutines (client-go's, through
// RedirectKlog, while the command runs) go to the same stderr, which Run
// serializes: a stderr that is not safe for concurrent use (a buffer, in
// a test of the binary's main) saw a data race, the failure line written
// without the logger's lock.
func TestCommandFailureLineWhileClientGoLogs(t *testing.T) {
	cfg, _, _ := apiServer(t, "ns/a")
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, cfg.Host); err != nil {
		t.Fatal(err)
	}
	cmd := Command{
		Name: "thing-operator", Objects: "things",
		New: func(op *Operator, _ FrameworkOptions, _ log.Logger) (*framework.Framework, error) {
			return planFramework(t, op), nil
		},
	}
	// A client-go goroutine that logs until the command has returned.
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				klog.InfoS("Failed to renew lease", "lock", "ns/other")
				runtime.Gosched()
			}
		}
	}()
	var stdout, stderr bytes.Buffer
	code := cmd.Run(t.Context(), []string{"plan", "--kubeconfig", kubeconfig, "ns/zz"}, &stdout, &stderr)
	close(stop)
	<-stopped
	if code != 1 || !strings.Contains(stderr.String(), "thing-operator plan: ns/zz: not found\n") {
		t.Errorf("plan of a missing object: exit %d, stderr %q; want 1 and the failure line", code, stderr.String())
	}
}
