package operator

import (
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// TestSelecting: an object maps to the owners whose selector selects its
// labels, sorted, namespaced and cluster-scoped; an owner of another type,
// one whose selector fails or is nil, selects nothing; a tombstone maps as
// its object.
func TestSelecting(t *testing.T) {
	// Owners are ConfigMaps whose data "selector" is a label selector.
	owner := func(ns, name, selector string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"selector": selector}}
	}
	owners := informertest.New(
		owner("", "prod", "env=prod"),
		owner("", "all", "env"),
		owner("team", "prod-too", "env in (prod,stage)"),
		owner("", "dev", "env=dev"),
		owner("", "bad", "env=="+"=x"),
		owner("", "none", "-"),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "other-type"}},
	)
	mapFunc := Selecting(owners, func(cm *corev1.ConfigMap) (labels.Selector, error) {
		switch s := cm.Data["selector"]; s {
		case "-":
			return nil, nil
		case "env===x":
			return nil, errors.New("invalid")
		default:
			return labels.Parse(s)
		}
	})
	ns := func(l map[string]string) *metav1.PartialObjectMetadata {
		return &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: l}}
	}
	for _, tt := range []struct {
		name string
		obj  any
		want []string
	}{
		{"prod", ns(map[string]string{"env": "prod"}), []string{"all", "prod", "team/prod-too"}},
		{"dev", ns(map[string]string{"env": "dev"}), []string{"all", "dev"}},
		{"no labels", ns(nil), nil},
		{"a tombstone", cache.DeletedFinalStateUnknown{Key: "n", Obj: ns(map[string]string{"env": "stage"})}, []string{"all", "team/prod-too"}},
		{"not an object", "n", nil},
	} {
		if got := mapFunc(tt.obj); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Selecting = %q, want %q", tt.name, got, tt.want)
		}
	}
	if got := Selecting[*corev1.ConfigMap](nil, nil)(ns(nil)); got != nil {
		t.Errorf("Selecting of no owners = %q, want none", got)
	}
}

// TestSelectingInTheOwnersNamespace: the selector of a namespaced owner
// selects the objects of its own namespace (a NetworkPolicy's pod selector,
// a Service's), and cluster-scoped ones (Namespaces); a cluster-scoped
// owner's selects objects of every namespace. A Pod's event woke every
// namespaced owner of every namespace whose selector matched its labels:
// with one such owner per namespace, each Pod event woke them all.
func TestSelectingInTheOwnersNamespace(t *testing.T) {
	owner := func(ns, name string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	owners := informertest.New(owner("a", "policy"), owner("b", "policy"), owner("", "cluster-wide"))
	mapFunc := Selecting(owners, func(*corev1.ConfigMap) (labels.Selector, error) {
		return labels.SelectorFromSet(labels.Set{"app": "web"}), nil
	})
	web := map[string]string{"app": "web"}
	for _, tt := range []struct {
		name string
		obj  any
		want []string
	}{
		{"a Pod of namespace a", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", Labels: web}}, []string{"a/policy", "cluster-wide"}},
		{"a Pod of namespace c", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Namespace: "c", Name: "x", Labels: web}}, []string{"cluster-wide"}},
		{"a Namespace", &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: web}}, []string{"a/policy", "b/policy", "cluster-wide"}},
	} {
		if got := mapFunc(tt.obj); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Selecting = %q, want %q", tt.name, got, tt.want)
		}
	}
}
