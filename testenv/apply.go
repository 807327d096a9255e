package testenv

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Apply creates or updates the objects in paths, as `kubectl apply
// --server-side --force-conflicts -f` does: each path is a YAML or JSON
// file, or a directory whose .yaml, .yml and .json files are read in name
// order (not its subdirectories); a file may hold several documents
// separated by "---". The objects are applied one by one, in that order,
// with server-side apply under the field manager "operatorkit-testenv";
// an object of a namespaced kind without a namespace goes to "default".
// Apply returns the objects as the API server answered, in the same
// order, so that a test can read their UIDs and resourceVersions.
//
// Every document needs apiVersion, kind and metadata.name. A kind the API
// server does not serve is waited for, up to Options.StartTimeout
// (DefaultStartTimeout when zero) and ctx, so that objects of a CRD that
// is being installed can be applied; install CRDs with Options.CRDs or
// InstallCRDs, which wait until they are served. The error names the file
// and document that could not be read, mapped or applied; the objects
// before it stay applied.
func (e *Env) Apply(ctx context.Context, paths ...string) ([]*unstructured.Unstructured, error) {
	if len(paths) == 0 {
		return nil, errors.New("testenv: Apply: no path given")
	}
	var ms []manifest
	for _, p := range paths {
		files, _, err := manifestFiles(p)
		if err != nil {
			return nil, fmt.Errorf("testenv: Apply: %w", err)
		}
		for _, f := range files {
			docs, err := readObjects(f)
			if err != nil {
				return nil, fmt.Errorf("testenv: Apply: %w", err)
			}
			for _, m := range docs {
				if v, ok, _ := unstructured.NestedFieldNoCopy(m.obj.Object, "metadata", "name"); ok && v != nil {
					if _, isString := v.(string); !isString {
						return nil, fmt.Errorf("testenv: Apply: %s: metadata.name is %v, a %T, not a string (YAML reads y, n, yes, no, on and off as booleans: quote the name)", m.source, v, v)
					}
				}
				if m.obj.GetAPIVersion() == "" || m.obj.GetKind() == "" || m.obj.GetName() == "" {
					return nil, fmt.Errorf("testenv: Apply: %s needs apiVersion, kind and metadata.name (server-side apply names the object), has %q, %q and %q",
						m.source, m.obj.GetAPIVersion(), m.obj.GetKind(), m.obj.GetName())
				}
				ms = append(ms, m)
			}
		}
	}

	client, disc, err := e.clients()
	if err != nil {
		return nil, fmt.Errorf("testenv: Apply: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	timeout := e.opts.StartTimeout
	out := make([]*unstructured.Unstructured, 0, len(ms))
	for _, m := range ms {
		gvk := m.obj.GroupVersionKind()
		var mapping *meta.RESTMapping
		var noMatch error
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
			var err error
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				noMatch = err
				mapper.Reset() // read discovery again: the kind may be being installed
				return false, nil
			}
			return err == nil, err
		})
		if err != nil {
			if noMatch != nil && wait.Interrupted(err) {
				err = fmt.Errorf("%w (waited %s)", noMatch, timeout)
			}
			return out, fmt.Errorf("testenv: Apply %s: %w", m.source, err)
		}
		resource := client.Resource(mapping.Resource)
		var r dynamic.ResourceInterface = resource
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			if m.obj.GetNamespace() == "" {
				m.obj.SetNamespace("default")
			}
			r = resource.Namespace(m.obj.GetNamespace())
		}
		got, err := r.Apply(ctx, m.obj.GetName(), m.obj, metav1.ApplyOptions{FieldManager: fieldManager, Force: true})
		if err != nil {
			return out, fmt.Errorf("testenv: Apply %s %s from %s: %w", gvk.Kind, m.obj.GetName(), m.source, err)
		}
		out = append(out, got)
	}
	return out, nil
}
