package operator

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-kit/log"

	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/framework"
)

var testRules = []rbacv1.PolicyRule{
	{APIGroups: []string{"example.com"}, Resources: []string{"things", "things/status"}, Verbs: []string{"get", "list", "watch", "patch"}},
	{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
}

func permissionStrings(ps []Permission) string {
	var s []string
	for _, p := range ps {
		s = append(s, p.String())
	}
	return strings.Join(s, "|")
}

func TestPermissionsOf(t *testing.T) {
	got := permissionStrings(PermissionsOf(testRules[:1], "ns", func(verb, _, resource string) bool { return verb == "patch" || resource == "things" && verb == "get" }))
	want := `get things.example.com in namespace "ns"|patch things.example.com in namespace "ns"|patch things.example.com/status in namespace "ns"`
	if got != want {
		t.Fatalf("PermissionsOf = %q, want %q", got, want)
	}
	named := []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"a", "b"}, Verbs: []string{"get", "update"}}}
	got = permissionStrings(PermissionsOf(named, "ns", nil))
	want = `get configmaps "a" in namespace "ns"|get configmaps "b" in namespace "ns"|update configmaps "a" in namespace "ns"|update configmaps "b" in namespace "ns"`
	if got != want {
		t.Fatalf("PermissionsOf(resourceNames) = %q, want %q", got, want)
	}
	if p := (Permission{Verb: "list", Resource: "configmaps"}); p.String() != "list configmaps in all namespaces" {
		t.Fatalf("String() = %q", p)
	}
}

func TestPermissions(t *testing.T) {
	tests := []struct {
		name  string
		opts  Options
		fopts FrameworkOptions
		want  string
	}{
		{name: "operator with leader election", opts: Options{LeaderElect: true, LeaderElectionNamespace: "ops"}, fopts: FrameworkOptions{Namespace: "apps"},
			want: `get things.example.com in namespace "apps"|list things.example.com in namespace "apps"|watch things.example.com in namespace "apps"|patch things.example.com in namespace "apps"|` +
				`get things.example.com/status in namespace "apps"|list things.example.com/status in namespace "apps"|watch things.example.com/status in namespace "apps"|patch things.example.com/status in namespace "apps"|` +
				`create events in namespace "apps"|get leases.coordination.k8s.io in namespace "ops"|create leases.coordination.k8s.io in namespace "ops"|update leases.coordination.k8s.io in namespace "ops"`},
		{name: "sharded operator", opts: Options{Shard: true, LeaderElectionNamespace: "ops"}, fopts: FrameworkOptions{Namespace: "apps"},
			want: `get things.example.com in namespace "apps"|list things.example.com in namespace "apps"|watch things.example.com in namespace "apps"|patch things.example.com in namespace "apps"|` +
				`get things.example.com/status in namespace "apps"|list things.example.com/status in namespace "apps"|watch things.example.com/status in namespace "apps"|patch things.example.com/status in namespace "apps"|` +
				`create events in namespace "apps"|get leases.coordination.k8s.io in namespace "ops"|list leases.coordination.k8s.io in namespace "ops"|watch leases.coordination.k8s.io in namespace "ops"|` +
				`create leases.coordination.k8s.io in namespace "ops"|update leases.coordination.k8s.io in namespace "ops"|delete leases.coordination.k8s.io in namespace "ops"`},
		{name: "leader election Lease by name", opts: Options{LeaderElect: true, LeaderElectionNamespace: "ops", LeaderElectionID: "op"}, fopts: FrameworkOptions{DryRun: true},
			want: `get things.example.com in all namespaces|list things.example.com in all namespaces|watch things.example.com in all namespaces|` +
				`get things.example.com/status in all namespaces|list things.example.com/status in all namespaces|watch things.example.com/status in all namespaces|` +
				`get leases.coordination.k8s.io "op" in namespace "ops"|create leases.coordination.k8s.io in namespace "ops"|update leases.coordination.k8s.io "op" in namespace "ops"`},
		{name: "dry run without leader election", fopts: FrameworkOptions{DryRun: true},
			want: `get things.example.com in all namespaces|list things.example.com in all namespaces|watch things.example.com in all namespaces|` +
				`get things.example.com/status in all namespaces|list things.example.com/status in all namespaces|watch things.example.com/status in all namespaces`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := permissionStrings(Permissions(testRules, tt.opts, tt.fopts)); got != tt.want {
				t.Fatalf("Permissions() =\n%s\nwant\n%s", strings.ReplaceAll(got, "|", "\n"), strings.ReplaceAll(tt.want, "|", "\n"))
			}
		})
	}
}

// TestPermissionsDryRunWildcardVerb: a rule's verb "*" grants every verb,
// get, list and watch included, which a dry run needs; Permissions kept only
// the verbs spelled get, list or watch, so a dry run checked nothing of such
// a rule and a plan under an identity that cannot list them passed Preflight.
func TestPermissionsDryRunWildcardVerb(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"*"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"watch", "*", "patch"}},
		{APIGroups: []string{""}, Resources: []string{"events"}, Verbs: []string{"create"}},
	}
	got := permissionStrings(Permissions(rules, Options{}, FrameworkOptions{Namespace: "ns", DryRun: true}))
	want := `get configmaps in namespace "ns"|list configmaps in namespace "ns"|watch configmaps in namespace "ns"|` +
		`watch deployments.apps in namespace "ns"|get deployments.apps in namespace "ns"|list deployments.apps in namespace "ns"`
	if got != want {
		t.Fatalf("Permissions(dry run) =\n%s\nwant\n%s", strings.ReplaceAll(got, "|", "\n"), strings.ReplaceAll(want, "|", "\n"))
	}
	// Not in a dry run: "*" is checked as "*", as the authorizer reads a
	// review of verb "*" (every verb: only a rule of verb "*" grants it).
	got = permissionStrings(Permissions(rules[:1], Options{}, FrameworkOptions{Namespace: "ns"}))
	if want := `* configmaps in namespace "ns"`; got != want {
		t.Fatalf("Permissions() = %q, want %q", got, want)
	}
}

// authServer answers discovery and SelfSubjectAccessReviews: allowed holds
// the verbs granted, served the resources of example.com/v1.
func authServer(t *testing.T, allowed map[string]bool, served ...string) *rest.Config {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/version":
			_ = json.NewEncoder(w).Encode(map[string]string{"major": "1", "minor": "35", "gitVersion": "v1.35.0"})
		case strings.HasSuffix(r.URL.Path, "/selfsubjectaccessreviews"):
			var review authorizationv1.SelfSubjectAccessReview
			if err := json.NewDecoder(r.Body).Decode(&review); err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			review.Status.Allowed = allowed[review.Spec.ResourceAttributes.Verb]
			w.WriteHeader(http.StatusCreated)
			_ = json.NewEncoder(w).Encode(review)
		case r.URL.Path == "/apis/example.com/v1":
			var resources []map[string]any
			for _, s := range served {
				resources = append(resources, map[string]any{"name": s, "namespaced": true, "kind": "Thing", "verbs": []string{"get"}})
			}
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "example.com/v1", "resources": resources})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return &rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: "application/json"}}
}

func TestPreflight(t *testing.T) {
	perms := Permissions(testRules, Options{}, FrameworkOptions{Namespace: "apps"})
	thingsGVR := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}
	tests := []struct {
		name    string
		cfg     *rest.Config
		config  PreflightConfig
		wantErr string // "" for none
	}{
		{name: "no rest config", cfg: nil, wantErr: "no rest.Config to check (nil)"},
		{name: "all granted, served", cfg: authServer(t, map[string]bool{"get": true, "list": true, "watch": true, "patch": true, "create": true}, "things"),
			config: PreflightConfig{Permissions: perms, Served: thingsGVR}},
		{name: "missing verbs", cfg: authServer(t, map[string]bool{"get": true, "list": true, "watch": true}, "things"),
			config:  PreflightConfig{Permissions: perms, Served: thingsGVR},
			wantErr: `missing permissions: patch things.example.com in namespace "apps"; patch things.example.com/status in namespace "apps"; create events in namespace "apps"`},
		{name: "not served", cfg: authServer(t, map[string]bool{"get": true, "list": true, "watch": true, "patch": true, "create": true}),
			config: PreflightConfig{Permissions: perms, Served: thingsGVR}, wantErr: "does not serve things.example.com: install its CRD"},
		{name: "served not required", cfg: authServer(t, map[string]bool{"get": true, "list": true, "watch": true, "patch": true, "create": true}),
			config: PreflightConfig{Permissions: perms}},
		{name: "unreachable", cfg: &rest.Config{Host: "http://127.0.0.1:1"}, wantErr: "cannot reach the API server at http://127.0.0.1:1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Preflight(t.Context(), tt.cfg, tt.config)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Preflight() = %v, want nil", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "\n")):
				t.Fatalf("Preflight() = %v, want one line containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestCommandStopsCleanlyDuringPreflight: the context of Command.Run ends
// (the first SIGTERM, as a pod deleted while it starts) while Check's
// Preflight waits for the API server: a clean stop, exit code 0, as the
// same signal a moment later, during Run, is; not exit code 1 with
// "cannot reach the API server ...: context canceled".
func TestCommandStopsCleanlyDuringPreflight(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/version":
			_ = json.NewEncoder(w).Encode(map[string]string{"major": "1", "minor": "35", "gitVersion": "v1.35.0"})
		case strings.HasSuffix(r.URL.Path, "/selfsubjectaccessreviews"):
			_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client go
			select {
			case entered <- struct{}{}:
			default:
			}
			select { // an API server that does not answer yet
			case <-r.Context().Done():
			case <-release:
			}
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	defer close(release)
	kubeconfig := t.TempDir() + "/kubeconfig"
	if err := writeKubeconfig(kubeconfig, srv.URL); err != nil {
		t.Fatal(err)
	}
	cmd := Command{
		Name: "thing-operator",
		Check: func(ctx context.Context, restConfig *rest.Config, opts Options, fopts FrameworkOptions) error {
			return Preflight(ctx, restConfig, PreflightConfig{Permissions: Permissions(testRules, opts, fopts)})
		},
		New: func(*Operator, FrameworkOptions, log.Logger) (*framework.Framework, error) {
			return nil, errors.New("New must not run: the context ended during Check")
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	code := make(chan int, 1)
	go func() {
		code <- cmd.Run(ctx, []string{"--kubeconfig", kubeconfig, "--leader-elect=false", "--metrics-bind-address", "0", "--health-probe-bind-address", "0"}, &stdout, &stderr)
	}()
	select {
	case <-entered:
	case c := <-code:
		t.Fatalf("Command.Run returned %d before the preflight; stderr %q", c, stderr.String())
	case <-time.After(time.Minute):
		t.Fatal("the preflight did not start within a minute")
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 || strings.Contains(stderr.String(), "thing-operator: ") {
			t.Errorf("Command.Run = %d, stderr %q; want 0 and no error line: a clean stop", c, stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Command.Run did not return within 30 s of its context ending")
	}
}
