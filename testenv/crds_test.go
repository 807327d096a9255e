package testenv_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/operatorkit/operatorkit/testenv"
)

// crdYAML is a namespaced v1 CRD of group crd.testenv.io, as controller-gen
// writes one, with an extra spec field in its schema when field is set.
func crdYAML(plural, kind, field string) string {
	props := "              message:\n                type: string\n"
	if field != "" {
		props += "              " + field + ":\n                type: string\n"
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[1]s.crd.testenv.io
spec:
  group: crd.testenv.io
  names:
    kind: %[2]s
    listKind: %[2]sList
    plural: %[1]s
    singular: %[3]s
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
%[4]s`, plural, kind, strings.ToLower(kind), props)
}

// writeFiles writes name → content into a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestReadCRDs: the files and directories Options.CRDs takes, and the
// errors that name what is wrong, without a server.
func TestReadCRDs(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		// Two documents, a comment-only one and a separator first.
		"b.yaml": "# generated\n---\n" + crdYAML("widgets", "Widget", "") + "---\n# nothing\n---\n" + crdYAML("gadgets", "Gadget", ""),
		"a.yml":  crdYAML("gizmos", "Gizmo", ""),
		"c.json": `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"doodads.crd.testenv.io"}}`,
		// Skipped in a directory: objects of other kinds (kubebuilder's
		// config/crd has a kustomization.yaml beside the CRDs).
		"kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n- b.yaml\n",
		"patch.yaml":         "resources:\n- a.yml\n",
		// Not read: another extension, a subdirectory.
		"README.md":      "# CRDs",
		"sub/other.yaml": crdYAML("others", "Other", ""),
	})
	crds, err := testenv.ReadCRDs(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range crds {
		names = append(names, c.GetName())
	}
	// Files in name order, documents in file order.
	want := "gizmos.crd.testenv.io widgets.crd.testenv.io gadgets.crd.testenv.io doodads.crd.testenv.io"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("CRDs read: %s, want %s", got, want)
	}
	if v, _, _ := unstructured.NestedSlice(crds[0].Object, "spec", "versions"); len(v) != 1 {
		t.Errorf("gizmos: spec.versions = %v, want one version", v)
	}

	// A single file, and several paths.
	one := filepath.Join(dir, "a.yml")
	if crds, err := testenv.ReadCRDs(one, filepath.Join(dir, "sub")); err != nil || len(crds) != 2 {
		t.Errorf("ReadCRDs(file, dir) = %d CRDs, %v; want 2", len(crds), err)
	}

	bad := writeFiles(t, map[string]string{
		"configmap.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n",
		"second.yaml":                  crdYAML("widgets", "Widget", "") + "---\napiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata:\n  name: old.crd.testenv.io\n",
		"noname.yaml":                  "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nspec: {}\n",
		"broken.yaml":                  "apiVersion: [unclosed\n",
		"empty.yaml":                   "# only a comment\n",
		"list.json":                    `[1, 2]`,
		"empty/x.txt":                  "",
		"dup/w.yaml":                   crdYAML("widgets", "Widget", ""),
		"kustomize/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n",
	})
	for _, tc := range []struct {
		name  string
		paths []string
		want  []string // substrings of the error
	}{
		{"no path", nil, []string{"no CRD path"}},
		{"missing path", []string{filepath.Join(bad, "nope.yaml")}, []string{"nope.yaml", "no such file"}},
		{"not a CRD", []string{filepath.Join(bad, "configmap.yaml")}, []string{"configmap.yaml", "v1 ConfigMap", "not a CustomResourceDefinition"}},
		{"old API version", []string{filepath.Join(bad, "second.yaml")}, []string{"second.yaml (document 2)", "apiextensions.k8s.io/v1beta1"}},
		{"no name", []string{filepath.Join(bad, "noname.yaml")}, []string{"noname.yaml", "no metadata.name"}},
		{"not YAML", []string{filepath.Join(bad, "broken.yaml")}, []string{"broken.yaml", "not YAML"}},
		{"no object", []string{filepath.Join(bad, "empty.yaml")}, []string{"empty.yaml", "holds no object"}},
		{"not an object", []string{filepath.Join(bad, "list.json")}, []string{"list.json", "not a Kubernetes object"}},
		{"no CRD in directory", []string{filepath.Join(bad, "kustomize")}, []string{"kustomize holds no CustomResourceDefinition"}},
		{"no manifest in directory", []string{filepath.Join(bad, "empty")}, []string{"empty", "no .yaml, .yml or .json file"}},
		{"the same CRD twice", []string{dir, filepath.Join(bad, "dup")}, []string{"widgets.crd.testenv.io is in both", "b.yaml (document 2)", "w.yaml"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testenv.ReadCRDs(tc.paths...)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}

	// Start checks Options.CRDs before it builds or starts anything.
	_, err = testenv.Start(t.Context(), testenv.Options{CRDs: []string{filepath.Join(bad, "configmap.yaml")}})
	if err == nil || !strings.Contains(err.Error(), "Options.CRDs") || !strings.Contains(err.Error(), "configmap.yaml") {
		t.Errorf("Start with a ConfigMap in Options.CRDs: %v, want an error naming Options.CRDs and the file", err)
	}
}

// TestCRDs: Start installs Options.CRDs and returns when their resources
// are served; InstallCRDs adds and updates CRDs later, and names the CRD
// and the file the API server rejects.
func TestCRDs(t *testing.T) {
	t.Parallel() // a server of its own
	dir := writeFiles(t, map[string]string{
		"crd.testenv.io_widgets.yaml": crdYAML("widgets", "Widget", ""),
		"crd.testenv.io_gadgets.yaml": crdYAML("gadgets", "Gadget", ""),
	})
	env := testenv.New(t, testenv.Options{CRDs: []string{dir}})
	ctx := t.Context()
	client, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	// create makes an object of plural at once: no polling, Start (or
	// InstallCRDs) waited until the resource was served.
	create := func(plural, kind, name string) error {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "crd.testenv.io/v1", "kind": kind,
			"metadata": map[string]any{"name": name, "namespace": "default"},
			"spec":     map[string]any{"message": "hi"},
		}}
		_, err := client.Resource(schema.GroupVersionResource{Group: "crd.testenv.io", Version: "v1", Resource: plural}).
			Namespace("default").Create(ctx, u, metav1.CreateOptions{})
		return err
	}
	for _, kind := range []string{"Widget", "Gadget"} {
		if err := create(strings.ToLower(kind)+"s", kind, "one"); err != nil {
			t.Errorf("create a %s right after Start: %v", kind, err)
		}
	}

	// A new CRD, and an update of an installed one (a new schema field).
	later := writeFiles(t, map[string]string{
		"gizmos.yaml":  crdYAML("gizmos", "Gizmo", ""),
		"widgets.yaml": crdYAML("widgets", "Widget", "color"),
	})
	if err := env.InstallCRDs(ctx, later); err != nil {
		t.Fatalf("InstallCRDs: %v", err)
	}
	if err := create("gizmos", "Gizmo", "one"); err != nil {
		t.Errorf("create a Gizmo right after InstallCRDs: %v", err)
	}
	crd, err := client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(ctx, "widgets.crd.testenv.io", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	if _, ok, _ := unstructured.NestedMap(versions[0].(map[string]any), "schema", "openAPIV3Schema", "properties", "spec", "properties", "color"); !ok {
		t.Errorf("InstallCRDs did not update widgets: its spec schema has no color")
	}

	// The API server rejects a CRD whose name is not <plural>.<group>.
	invalid := writeFiles(t, map[string]string{
		"bad.yaml": strings.Replace(crdYAML("things", "Thing", ""), "name: things.crd.testenv.io", "name: stuff.crd.testenv.io", 1),
	})
	err = env.InstallCRDs(ctx, invalid)
	if err == nil || !strings.Contains(err.Error(), "stuff.crd.testenv.io") || !strings.Contains(err.Error(), "bad.yaml") {
		t.Errorf("InstallCRDs of an invalid CRD: %v, want an error naming the CRD and its file", err)
	}

	// A CRD whose kind another CRD of the group has: NamesAccepted false,
	// an error at once rather than a wait until the timeout.
	conflict := writeFiles(t, map[string]string{
		"clash.yaml": crdYAML("clashes", "Widget", ""),
	})
	err = env.InstallCRDs(ctx, conflict)
	if err == nil || !strings.Contains(err.Error(), "clashes.crd.testenv.io") || !strings.Contains(err.Error(), "names not accepted") {
		t.Errorf("InstallCRDs of a CRD with a kind in use: %v, want an error naming the CRD and its names", err)
	}
}

// TestApply: Apply creates and updates objects of built-in and custom
// kinds from files, namespaced or not, and names the document it cannot
// apply.
func TestApply(t *testing.T) {
	t.Parallel() // a server of its own
	env := testenv.New(t, testenv.Options{CRDs: []string{writeFiles(t, map[string]string{"w.yaml": crdYAML("widgets", "Widget", "")})}})
	ctx := t.Context()
	dir := writeFiles(t, map[string]string{
		"1-namespace.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team\ndata:\n  level: \"1\"\n",
		"2-widget.json": `{"apiVersion":"crd.testenv.io/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"message":"hi"}}`,
	})
	objs, err := env.Apply(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		if o.GetUID() == "" {
			t.Errorf("%s %s: no UID in the answer", o.GetKind(), o.GetName())
		}
		got = append(got, o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName())
	}
	// Document order; the Widget, namespaced and without a namespace, in default.
	if want := "Namespace /team, ConfigMap team/settings, Widget default/w"; strings.Join(got, ", ") != want {
		t.Errorf("applied %s, want %s", strings.Join(got, ", "), want)
	}

	// Applying again updates: same object, new data.
	again := writeFiles(t, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n  namespace: team\ndata:\n  level: \"2\"\n",
	})
	objs2, err := env.Apply(ctx, filepath.Join(again, "cm.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if objs2[0].GetUID() != objs[1].GetUID() {
		t.Errorf("second Apply made a new ConfigMap (UID %s, was %s)", objs2[0].GetUID(), objs[1].GetUID())
	}
	if level, _, _ := unstructured.NestedString(objs2[0].Object, "data", "level"); level != "2" {
		t.Errorf("second Apply: data.level = %q, want 2", level)
	}

	bad := writeFiles(t, map[string]string{
		"noname.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  generateName: x-\n",
		"unknown.yaml":  "apiVersion: nope.testenv.io/v1\nkind: Nope\nmetadata:\n  name: nope\n",
		"boolname.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: no\n",
		"nometa.yaml":   "apiVersion: v1\nkind: ConfigMap\ndata:\n  a: b\n",
	})
	if _, err := env.Apply(ctx, filepath.Join(bad, "nometa.yaml")); err == nil || !strings.Contains(err.Error(), "nometa.yaml needs apiVersion, kind and metadata.name") {
		t.Errorf("Apply of an object without metadata: %v", err)
	}
	if _, err := env.Apply(ctx, filepath.Join(bad, "boolname.yaml")); err == nil || !strings.Contains(err.Error(), "metadata.name is false, a bool") {
		t.Errorf("Apply of an object named no (a YAML boolean): %v", err)
	}
	if _, err := env.Apply(ctx, filepath.Join(bad, "noname.yaml")); err == nil || !strings.Contains(err.Error(), "noname.yaml needs apiVersion, kind and metadata.name") {
		t.Errorf("Apply of an object without a name: %v", err)
	}
	// A kind nobody serves is waited for (a CRD may be being installed),
	// up to ctx.
	short, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	if _, err := env.Apply(short, filepath.Join(bad, "unknown.yaml")); err == nil || !strings.Contains(err.Error(), "unknown.yaml") || !strings.Contains(err.Error(), "no matches for kind") {
		t.Errorf("Apply of a kind nobody serves: %v, want an error naming the file and the kind", err)
	}
}

// TestWaitReady: WaitReady returns once Ready is True for the current
// generation, keeps waiting while it is not (saying why when ctx ends), and
// stops at once on a current Stalled condition.
func TestWaitReady(t *testing.T) {
	t.Parallel() // a server of its own
	crd := strings.Replace(crdYAML("widgets", "Widget", ""), "    storage: true\n", "    storage: true\n    subresources:\n      status: {}\n", 1) +
		"          status:\n            type: object\n            x-kubernetes-preserve-unknown-fields: true\n"
	env := testenv.New(t, testenv.Options{CRDs: []string{writeFiles(t, map[string]string{"w.yaml": crd})}})
	ctx := t.Context()
	gvr := schema.GroupVersionResource{Group: "crd.testenv.io", Version: "v1", Resource: "widgets"}
	client, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	widgets := client.Resource(gvr).Namespace("default")
	// notReady checks that WaitReady, given a second, fails saying want.
	notReady := func(step, want string) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := env.WaitReady(short, gvr, "default", "w")
		if err == nil || !strings.Contains(err.Error(), "crd.testenv.io default/w not ready") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: WaitReady = %v, want an error saying %q", step, err, want)
		}
	}
	// setStatus writes the status: conditions as type=status/reason/observedGeneration.
	setStatus := func(observed int64, conds ...map[string]any) {
		t.Helper()
		u, err := widgets.Get(ctx, "w", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		list := make([]any, len(conds))
		for i, c := range conds {
			c["lastTransitionTime"], c["message"] = "2026-01-01T00:00:00Z", "said by the test"
			list[i] = c
		}
		status := map[string]any{"conditions": list}
		if observed > 0 {
			status["observedGeneration"] = observed
		}
		u.Object["status"] = status
		if _, err := widgets.UpdateStatus(ctx, u, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cond := func(typ, status, reason string, gen int64) map[string]any {
		return map[string]any{"type": typ, "status": status, "reason": reason, "observedGeneration": gen}
	}

	notReady("missing", "not found")
	if _, err := env.Apply(ctx, writeFiles(t, map[string]string{"w.yaml": "apiVersion: crd.testenv.io/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  message: one\n"})); err != nil {
		t.Fatal(err)
	}
	notReady("no status", "no Ready condition")
	setStatus(0, cond("Ready", "False", "Pending", 1))
	notReady("Ready False", "Ready is False (reason Pending: said by the test)")

	// Ready while WaitReady polls.
	done := make(chan error, 1)
	go func() {
		u, err := env.WaitReady(ctx, gvr, "default", "w")
		if err == nil && u.GetName() != "w" {
			err = fmt.Errorf("returned %s", u.GetName())
		}
		done <- err
	}()
	setStatus(1, cond("Ready", "True", "Done", 1))
	if err := <-done; err != nil {
		t.Errorf("WaitReady while the status became Ready: %v", err)
	}

	// A spec change: Ready is for the old generation.
	if _, err := widgets.Patch(ctx, "w", "application/merge-patch+json", []byte(`{"spec":{"message":"two"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	notReady("new generation", "Ready is for generation 1, the object is at 2")
	setStatus(1, cond("Ready", "True", "Done", 0))
	notReady("old status.observedGeneration", "status.observedGeneration is 1, the object is at 2")

	// Stalled for the current generation: an error at once, not a timeout.
	setStatus(2, cond("Ready", "False", "Failed", 2), cond("Stalled", "True", "InvalidSpec", 2))
	long, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := env.WaitReady(long, gvr, "default", "w"); err == nil || !strings.Contains(err.Error(), "will not be ready: Stalled is True (reason InvalidSpec") || long.Err() != nil {
		t.Errorf("WaitReady of a stalled object: %v (ctx: %v), want the Stalled condition at once", err, long.Err())
	}
	setStatus(2, cond("Ready", "True", "Done", 2), cond("Stalled", "False", "Done", 2))
	if _, err := env.WaitReady(ctx, gvr, "default", "w"); err != nil {
		t.Errorf("WaitReady of a ready object: %v", err)
	}

	// WaitCondition: any condition, status and reason, for the current
	// generation; a Stalled condition does not end it.
	notCondition := func(step, typ string, status metav1.ConditionStatus, reason, want string) {
		t.Helper()
		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := env.WaitCondition(short, gvr, "default", "w", typ, status, reason)
		if err == nil || !strings.Contains(err.Error(), "crd.testenv.io default/w not "+typ) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: WaitCondition = %v, want an error saying %q", step, err, want)
		}
	}
	setStatus(2, cond("Ready", "False", "SecretNotFound", 2), cond("Stalled", "True", "InvalidSpec", 2))
	if u, err := env.WaitCondition(ctx, gvr, "default", "w", "Ready", metav1.ConditionFalse, "SecretNotFound"); err != nil || u.GetName() != "w" {
		t.Errorf("WaitCondition(Ready False SecretNotFound) = %v, %v", u, err)
	}
	if _, err := env.WaitCondition(ctx, gvr, "default", "w", "Stalled", metav1.ConditionTrue, ""); err != nil {
		t.Errorf("WaitCondition(Stalled True, any reason): %v", err)
	}
	notCondition("other reason", "Ready", metav1.ConditionFalse, "Failed", "Ready is False (reason SecretNotFound")
	notCondition("other status", "Ready", metav1.ConditionTrue, "", "Ready is False (reason SecretNotFound")
	notCondition("missing condition", "Reconciling", metav1.ConditionTrue, "", "no Reconciling condition")
	setStatus(2, cond("Ready", "False", "SecretNotFound", 1))
	notCondition("old generation", "Ready", metav1.ConditionFalse, "SecretNotFound", "Ready is for generation 1, the object is at 2")
	// The condition appears while WaitCondition polls.
	done = make(chan error, 1)
	go func() {
		_, err := env.WaitCondition(ctx, gvr, "default", "w", "Reconciling", metav1.ConditionTrue, "Progressing")
		done <- err
	}()
	setStatus(2, cond("Reconciling", "True", "Progressing", 2))
	if err := <-done; err != nil {
		t.Errorf("WaitCondition while the condition appeared: %v", err)
	}
}
