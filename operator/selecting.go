package operator

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer"
)

// Selecting returns a map function for Watches that names the objects of
// owners whose label selector selects the object of the event: the
// SharedConfigs whose spec.namespaceSelector selects a Namespace that was
// created, relabelled or deleted (Watches wakes the ones that selected it
// before a relabel as well), the NetworkPolicy-like objects whose pod
// selector selects a Pod. owners is the cache of the Framework's objects
// (its framework.Config.Informer); selector returns one owner's selector,
// typed (T is the owners' ObjectType, such as *v1alpha1.SharedConfig).
//
// As a label selector does in Kubernetes (a Service's, a NetworkPolicy's
// pod selector), a namespaced owner's selector selects the objects of its
// own namespace, and cluster-scoped objects (Namespaces); a cluster-scoped
// owner's selects objects of every namespace. An object of a namespace
// selects nothing in the owners of the other namespaces, so that a Pod
// does not wake every namespace's policy.
//
// Each event lists every owner and calls selector for each that may select
// the object (a cluster of thousands of owners pays that on every event of
// the watched kind: keep selector cheap, and cache the selector it builds
// when it is not). An owner of another type than T, an owner whose
// selector returns an error (its reconciliation reports the invalid
// selector) or a nil selector, and an object without labels' accessor,
// name nobody. The keys are "namespace/name", or "name" for a
// cluster-scoped owner, sorted.
func Selecting[T runtime.Object](owners informer.Lister, selector func(owner T) (labels.Selector, error)) func(obj any) []string {
	return func(obj any) []string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		m, err := meta.Accessor(obj)
		if err != nil || owners == nil {
			return nil
		}
		set := labels.Set(m.GetLabels())
		namespace := m.GetNamespace()
		var keys []string
		for _, o := range owners.List() {
			owner, ok := o.(T)
			if !ok {
				continue
			}
			if namespace != "" {
				// A namespaced owner selects in its namespace only.
				if om, err := meta.Accessor(owner); err != nil || om.GetNamespace() != "" && om.GetNamespace() != namespace {
					continue
				}
			}
			sel, err := selector(owner)
			if err != nil || sel == nil || !sel.Matches(set) {
				continue
			}
			if key, err := cache.MetaNamespaceKeyFunc(owner); err == nil {
				keys = append(keys, key)
			}
		}
		slices.Sort(keys)
		return keys
	}
}
