package e2e

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"
)

// kustomizationFiles returns the manifest files of the kustomization in
// dir, following directories that have a kustomization of their own (the
// only layout example/config uses: no patches, no generators).
func kustomizationFiles(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s/kustomization.yaml: %v", dir, err)
	}
	var files []string
	for _, r := range k.Resources {
		p := filepath.Join(dir, r)
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			files = append(files, kustomizationFiles(t, p)...)
			continue
		}
		files = append(files, p)
	}
	return files
}

// decodeManifests returns every object of the YAML documents in file.
func decodeManifests(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		err := dec.Decode(&u.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("decode %s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// TestManifestsApply applies everything of config/default (the CRD, the
// generated ClusterRole, the ServiceAccount and binding, the namespace and
// the Deployment with its probes) to the API server with a server-side dry
// run: every manifest is valid for the server. The Deployment's arguments
// must be flags the binary knows, and its probes must hit the probe port.
func TestManifestsApply(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	env, c := startCluster(t)
	ctx := contextFor(t)
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))

	files := kustomizationFiles(t, filepath.Join("..", "config", "default"))
	if len(files) < 4 {
		t.Fatalf("config/default has %d files, want the CRD, role, binding and manager: %v", len(files), files)
	}
	type manifest struct {
		file string
		obj  *unstructured.Unstructured
	}
	var objects []manifest
	for _, file := range files {
		for _, u := range decodeManifests(t, file) {
			objects = append(objects, manifest{file, u})
		}
	}
	// Namespaces first, for real: a dry-run namespace does not exist for
	// the objects in it.
	rank := func(m manifest) int {
		if m.obj.GetKind() == "Namespace" {
			return 0
		}
		return 1
	}
	slices.SortStableFunc(objects, func(a, b manifest) int { return cmp.Compare(rank(a), rank(b)) })
	var deployment *unstructured.Unstructured
	kinds := map[string]int{}
	for _, o := range objects {
		u, gvk := o.obj, o.obj.GroupVersionKind()
		kinds[gvk.Kind]++
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatalf("%s: %s: %v", o.file, gvk, err)
		}
		if gvk.Kind == "Namespace" {
			if _, err := c.dyn.Resource(m.Resource).Create(ctx, u, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatalf("%s: create namespace %s: %v", o.file, u.GetName(), err)
			}
			continue
		}
		if gvk.Kind == "Deployment" {
			deployment = u
		}
		_, err = c.dyn.Resource(m.Resource).Namespace(u.GetNamespace()).Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "e2e", Force: true, DryRun: []string{metav1.DryRunAll}})
		if err != nil {
			t.Errorf("%s: server-side dry run of %s %s: %v", o.file, gvk.Kind, u.GetName(), err)
		}
	}
	for _, kind := range []string{"CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding", "ServiceAccount", "Namespace", "Deployment"} {
		if kinds[kind] == 0 {
			t.Errorf("config/default has no %s", kind)
		}
	}
	if deployment == nil {
		t.Fatal("no Deployment")
	}

	// The container's arguments are flags of the binary.
	help, _ := exec.CommandContext(ctx, build(t, "webapp-operator"), "--help").CombinedOutput()
	containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
	if len(containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(containers))
	}
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.Contains(string(help), "\n  -"+name+" ") && !strings.Contains(string(help), "\n  -"+name+"\n") {
			t.Errorf("Deployment argument %q is not a flag of webapp-operator", a)
		}
	}
	for _, probe := range []string{"livenessProbe", "readinessProbe"} {
		path, _, _ := unstructured.NestedString(containers[0].(map[string]any), probe, "httpGet", "path")
		port, _, _ := unstructured.NestedFieldNoCopy(containers[0].(map[string]any), probe, "httpGet", "port")
		if want := map[string]string{"livenessProbe": "/healthz", "readinessProbe": "/readyz"}[probe]; path != want || port != "probes" {
			t.Errorf("%s = %v on port %v, want %s on the probes port", probe, path, port, want)
		}
	}
	if !strings.Contains(strings.Join(args, " "), "--health-probe-bind-address=:8081") {
		t.Errorf("Deployment args %v do not serve the probes on :8081", args)
	}
}
