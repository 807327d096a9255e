package testenv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

// fieldManager is the field manager of what InstallCRDs and Apply apply.
const fieldManager = "operatorkit-testenv"

// crdGVR is the resource of CustomResourceDefinitions.
var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// manifest is one object (a CRD, or any object for Apply) read from a
// file: the object and where it came from, for error messages.
type manifest struct {
	obj    *unstructured.Unstructured
	source string // "path" or "path (document n)"
}

// ReadCRDs reads the CustomResourceDefinitions (apiextensions.k8s.io/v1) in
// paths, the way Options.CRDs and InstallCRDs do, without a server: each
// path is a YAML or JSON file, or a directory whose .yaml, .yml and .json
// files are read in name order (not its subdirectories), as controller-gen
// writes config/crd/bases. A file may hold several YAML documents separated
// by "---"; empty documents are skipped. In a file named on its own every
// document must be a v1 CustomResourceDefinition; in a directory's files,
// documents of other kinds are skipped (a kustomization.yaml beside the
// CRDs), and the directory must hold at least one CRD. A CRD needs a name,
// and each name may come at most once.
//
// The error names the path (and the document) that is missing, unreadable,
// not YAML, or not such a CRD. Options.CRDs is checked with it before Start
// builds or starts anything.
func ReadCRDs(paths ...string) ([]*unstructured.Unstructured, error) {
	ms, err := readCRDs(paths)
	if err != nil {
		return nil, fmt.Errorf("testenv: read CRDs: %w", err)
	}
	out := make([]*unstructured.Unstructured, len(ms))
	for i, m := range ms {
		out[i] = m.obj
	}
	return out, nil
}

func readCRDs(paths []string) ([]manifest, error) {
	if len(paths) == 0 {
		return nil, errors.New("no CRD path given")
	}
	var out []manifest
	seen := map[string]string{} // CRD name → its source
	for _, p := range paths {
		files, dir, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		found := 0
		for _, f := range files {
			ms, err := readCRDFile(f, dir)
			if err != nil {
				return nil, err
			}
			found += len(ms)
			for _, m := range ms {
				name := m.obj.GetName()
				if first, ok := seen[name]; ok {
					return nil, fmt.Errorf("CRD %s is in both %s and %s", name, first, m.source)
				}
				seen[name] = m.source
				out = append(out, m)
			}
		}
		if found == 0 {
			return nil, fmt.Errorf("%s holds no CustomResourceDefinition", p)
		}
	}
	return out, nil
}

// manifestFiles returns path, or the manifest files of directory path; dir
// reports a directory.
func manifestFiles(path string) (files []string, dir bool, _ error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, fmt.Errorf("manifest path: %w", err)
	}
	if !fi.IsDir() {
		return []string{path}, false, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, true, fmt.Errorf("manifest directory: %w", err)
	}
	for _, e := range entries {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	if len(files) == 0 {
		return nil, true, fmt.Errorf("directory %s holds no .yaml, .yml or .json file", path)
	}
	return files, true, nil // os.ReadDir sorts by name
}

// readCRDFile returns the CRDs of one file, one per non-empty document.
// In a file of a directory (inDir), documents of another kind are skipped
// (config/crd's kustomization.yaml, say); a file named on its own must
// hold CRDs only.
func readCRDFile(path string, inDir bool) ([]manifest, error) {
	docs, err := readObjects(path)
	if err != nil {
		return nil, err
	}
	if len(docs) == 0 && !inDir {
		return nil, fmt.Errorf("CRD file %s holds no object", path)
	}
	var out []manifest
	for _, m := range docs {
		obj := m.obj
		if obj.GetKind() != "CustomResourceDefinition" && inDir {
			continue
		}
		if gvk := obj.GroupVersionKind(); gvk.Group != crdGVR.Group || gvk.Kind != "CustomResourceDefinition" || gvk.Version != crdGVR.Version {
			return nil, fmt.Errorf("%s is a %s %s, not a CustomResourceDefinition of %s", m.source, obj.GetAPIVersion(), obj.GetKind(), crdGVR.GroupVersion())
		}
		if obj.GetName() == "" {
			return nil, fmt.Errorf("the CustomResourceDefinition in %s has no metadata.name", m.source)
		}
		out = append(out, m)
	}
	return out, nil
}

// readObjects returns the objects of one file, one per non-empty YAML or
// JSON document, as maps: their kind is not checked.
func readObjects(path string) ([]manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("manifest file: %w", err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var out []manifest
	for n := 1; ; n++ {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		source := path
		if n > 1 {
			source = fmt.Sprintf("%s (document %d)", path, n)
		}
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", source, err)
		}
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s is not YAML or JSON: %w", source, err)
		}
		if t := bytes.TrimSpace(js); len(t) == 0 || string(t) == "null" {
			continue // an empty document: comments, or nothing between two "---"
		}
		var content map[string]any
		if err := utiljson.Unmarshal(js, &content); err != nil {
			return nil, fmt.Errorf("%s is not a Kubernetes object: %w", source, err)
		}
		out = append(out, manifest{obj: &unstructured.Unstructured{Object: content}, source: source})
	}
}

// InstallCRDs installs the CustomResourceDefinitions in paths (read as
// ReadCRDs reads them) with server-side apply, so that installing one again
// updates it, and waits until each is established and the API server's
// discovery lists every version it serves: a client may use the new
// resources as soon as InstallCRDs returns. ctx bounds the wait, and so
// does Options.StartTimeout (DefaultStartTimeout when zero). Start calls it
// for Options.CRDs.
//
// The error names the CRD and its file: one the API server rejects (an
// invalid schema, say), one whose names conflict with another's
// (NamesAccepted false), or those not served in time, with their
// conditions. CRDs stay installed across RestartAPIServer (etcd keeps
// them).
func (e *Env) InstallCRDs(ctx context.Context, paths ...string) error {
	ms, err := readCRDs(paths)
	if err != nil {
		return fmt.Errorf("testenv: InstallCRDs: %w", err)
	}
	return e.installCRDs(ctx, ms)
}

func (e *Env) installCRDs(ctx context.Context, ms []manifest) error {
	client, disc, err := e.clients()
	if err != nil {
		return fmt.Errorf("testenv: install CRDs: %w", err)
	}
	crds := client.Resource(crdGVR)
	for _, m := range ms {
		if _, err := crds.Apply(ctx, m.obj.GetName(), m.obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true}); err != nil {
			return fmt.Errorf("testenv: install CRD %s from %s: %w", m.obj.GetName(), m.source, err)
		}
	}
	timeout := e.opts.StartTimeout
	pending := slices.Clone(ms)
	var last map[string]string // CRD name → why it is not served yet
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		last = map[string]string{}
		left := pending[:0]
		for _, m := range pending {
			why, err := crdServed(ctx, crds, disc, m)
			if err != nil {
				return false, err
			}
			if why != "" {
				last[m.obj.GetName()] = why
				left = append(left, m)
			}
		}
		pending = left
		return len(pending) == 0, nil
	})
	if err == nil {
		return nil
	}
	if len(last) == 0 || !wait.Interrupted(err) {
		return err
	}
	var b strings.Builder
	for _, m := range pending {
		fmt.Fprintf(&b, "; %s (from %s): %s", m.obj.GetName(), m.source, last[m.obj.GetName()])
	}
	return fmt.Errorf("testenv: CRDs not served after %s%s: %w", timeout, b.String(), err)
}

// crdServed reports why m is not served yet ("" when it is): not
// established, or a served version missing from discovery. A CRD whose
// names are not accepted is an error: waiting does not change that.
func crdServed(ctx context.Context, crds dynamic.NamespaceableResourceInterface, disc discovery.DiscoveryInterface, m manifest) (string, error) {
	name := m.obj.GetName()
	u, err := crds.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return "not found", nil
		}
		return "", fmt.Errorf("testenv: read CRD %s: %w", name, err)
	}
	conds, _, err := statusConditions(u)
	if err != nil {
		return "status unreadable: " + err.Error(), nil
	}
	status := func(t string) metav1.ConditionStatus {
		if c := meta.FindStatusCondition(conds, t); c != nil {
			return c.Status
		}
		return ""
	}
	if status("NamesAccepted") == metav1.ConditionFalse {
		return "", fmt.Errorf("testenv: CRD %s from %s: names not accepted: %s", name, m.source, meta.FindStatusCondition(conds, "NamesAccepted").Message)
	}
	if status("Established") != metav1.ConditionTrue {
		return fmt.Sprintf("not established (Established %q, NamesAccepted %q)", status("Established"), status("NamesAccepted")), nil
	}
	group, _, _ := unstructured.NestedString(u.Object, "spec", "group")
	plural, _, _ := unstructured.NestedString(u.Object, "spec", "names", "plural")
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok || vm["served"] != true {
			continue
		}
		version, _ := vm["name"].(string)
		gv := schema.GroupVersion{Group: group, Version: version}.String()
		list, err := disc.ServerResourcesForGroupVersion(gv)
		if err != nil {
			if apierrors.IsNotFound(err) {
				return gv + " not in discovery yet", nil
			}
			return "", fmt.Errorf("testenv: discovery of %s for CRD %s: %w", gv, name, err)
		}
		if !slices.ContainsFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == plural }) {
			return plural + " not in discovery of " + gv + " yet", nil
		}
	}
	return "", nil
}

// clients returns an admin dynamic client and discovery client, or
// ErrStopped after Stop.
func (e *Env) clients() (*dynamic.DynamicClient, *discovery.DiscoveryClient, error) {
	e.mu.Lock()
	stopped := e.stopped
	e.mu.Unlock()
	if stopped {
		return nil, nil, ErrStopped
	}
	cfg := e.Config()
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	return client, disc, nil
}
