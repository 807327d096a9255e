package child

import (
	"context"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// genericRef has OwnerReference's fields and tags but another type: lists of
// it take the differ's reflective walk, never ownerReferencesMatch.
type genericRef metav1.OwnerReference

type fastRefs struct {
	Refs []metav1.OwnerReference `json:"ownerReferences,omitempty" patchStrategy:"merge" patchMergeKey:"uid"`
}

type genericRefs struct {
	Refs []genericRef `json:"ownerReferences,omitempty" patchStrategy:"merge" patchMergeKey:"uid"`
}

func toGeneric(refs []metav1.OwnerReference) []genericRef {
	if refs == nil {
		return nil
	}
	out := make([]genericRef, len(refs))
	for i, r := range refs {
		out[i] = genericRef(r)
	}
	return out
}

// TestOwnerReferencesFastPathAgreesWithWalk: the comparison of owner
// references without reflection finds a difference exactly when the
// reflective walk does, and the Fields reported are the walk's.
func TestOwnerReferencesFastPathAgreesWithWalk(t *testing.T) {
	yes, no := new(true), new(false)
	ref := func(uid, name string, controller, block *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "example.com/v1", Kind: "WebApp", Name: name, UID: types.UID(uid), Controller: controller, BlockOwnerDeletion: block}
	}
	owner := ref("u1", "a", yes, yes)
	other := ref("u2", "b", nil, nil)
	with := func(r metav1.OwnerReference, change func(*metav1.OwnerReference)) metav1.OwnerReference {
		change(&r)
		return r
	}
	for _, tc := range []struct {
		name             string
		desired, current []metav1.OwnerReference
		wantDifference   bool
	}{
		{name: "same", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{owner}},
		{name: "current has more", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{other, owner}},
		{name: "none desired", desired: nil, current: []metav1.OwnerReference{owner}},
		{name: "no current", desired: []metav1.OwnerReference{owner}, wantDifference: true},
		{name: "other uid", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{other}, wantDifference: true},
		{name: "name", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{with(owner, func(r *metav1.OwnerReference) { r.Name = "z" })}, wantDifference: true},
		{name: "kind", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{with(owner, func(r *metav1.OwnerReference) { r.Kind = "Other" })}, wantDifference: true},
		{name: "apiVersion", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{with(owner, func(r *metav1.OwnerReference) { r.APIVersion = "example.com/v2" })}, wantDifference: true},
		{name: "controller false", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{with(owner, func(r *metav1.OwnerReference) { r.Controller = no })}, wantDifference: true},
		{name: "controller unset in current", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{with(owner, func(r *metav1.OwnerReference) { r.Controller = nil })}, wantDifference: true},
		{name: "blockOwnerDeletion unset in current", desired: []metav1.OwnerReference{owner}, current: []metav1.OwnerReference{with(owner, func(r *metav1.OwnerReference) { r.BlockOwnerDeletion = nil })}, wantDifference: true},
		{name: "optional fields unset in desired", desired: []metav1.OwnerReference{other}, current: []metav1.OwnerReference{with(other, func(r *metav1.OwnerReference) { r.Controller, r.BlockOwnerDeletion = no, yes })}},
		{name: "two desired, one missing", desired: []metav1.OwnerReference{owner, other}, current: []metav1.OwnerReference{owner}, wantDifference: true},
		{name: "two desired, both there", desired: []metav1.OwnerReference{other, owner}, current: []metav1.OwnerReference{owner, other}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fast, _ := diffObject(reflect.ValueOf(&fastRefs{Refs: tc.desired}).Elem(), reflect.ValueOf(&fastRefs{Refs: tc.current}).Elem(), false)
			walked, _ := diffObject(reflect.ValueOf(&genericRefs{Refs: toGeneric(tc.desired)}).Elem(), reflect.ValueOf(&genericRefs{Refs: toGeneric(tc.current)}).Elem(), false)
			if got := len(fast) > 0; got != tc.wantDifference {
				t.Errorf("difference found = %v, want %v (fields %v)", got, tc.wantDifference, fast)
			}
			if !slices.Equal(fast, walked) {
				t.Errorf("fields = %v, the reflective walk's = %v", fast, walked)
			}
			if m := ownerReferencesMatch(reflect.ValueOf(&tc.desired).Elem(), reflect.ValueOf(&tc.current).Elem()); m == tc.wantDifference {
				t.Errorf("ownerReferencesMatch = %v, want %v", m, !tc.wantDifference)
			}
		})
	}
}

// TestOwnerReferenceFields: ownerReferencesMatch compares OwnerReference's
// fields by name; a field added to the type must be added there (and here).
func TestOwnerReferenceFields(t *testing.T) {
	var got []string
	for f := range reflect.TypeFor[metav1.OwnerReference]().Fields() {
		got = append(got, f.Name)
	}
	want := []string{"APIVersion", "Kind", "Name", "UID", "Controller", "BlockOwnerDeletion"}
	if !slices.Equal(got, want) {
		t.Errorf("metav1.OwnerReference has fields %v, ownerReferencesMatch compares %v: update it", got, want)
	}
}

// BenchmarkDiffObject measures the comparison of a child that needs no
// write, as a no-op reconciliation of bench/'s operator makes it: the
// desired ConfigMap of an Item (a label and two data keys) with the cached
// one (the managed-by label too, an owner reference, server-set metadata).
func BenchmarkDiffObject(b *testing.B) {
	cur := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "it", Namespace: "ns", UID: "u", ResourceVersion: "7",
			Labels:          map[string]string{"bench.operatorkit.io/item": "it", LabelManagedBy: "bench"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Item", Name: "it", UID: "o", Controller: new(true), BlockOwnerDeletion: new(true)}}},
		Data: map[string]string{"message": "hello", "count": "3"},
	}
	des := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "it", Namespace: "ns", Labels: map[string]string{"bench.operatorkit.io/item": "it"}},
		Data:       map[string]string{"message": "hello", "count": "3"},
	}
	dv, cv := reflect.ValueOf(des).Elem(), reflect.ValueOf(cur).Elem()
	b.ReportAllocs()
	for b.Loop() {
		if f, _ := diffObject(dv, cv, false); len(f) != 0 {
			b.Fatal(f)
		}
	}
}

// customOwner is an owner type that client-go's scheme does not know (as
// bench/'s Item): the controller reference takes its kind from each
// owner's TypeMeta.
type customOwner struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
}

func (w *customOwner) DeepCopyObject() runtime.Object {
	c := *w
	w.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// BenchmarkOwnerReference measures the controller reference to an owner
// of a kind outside client-go's scheme, which a no-op reconciliation
// builds twice (the desired state's check and the patch step).
func BenchmarkOwnerReference(b *testing.B) {
	o, err := newOps(Config[*customOwner, *corev1.ConfigMap]{
		Name: "configmap", Client: func(string) Client[*corev1.ConfigMap] { return nil }, Cache: emptyCache{},
		Desired: func(context.Context, *customOwner) (*corev1.ConfigMap, error) { return nil, nil },
	})
	if err != nil {
		b.Fatal(err)
	}
	w := &customOwner{TypeMeta: metav1.TypeMeta{APIVersion: "bench.operatorkit.io/v1", Kind: "Item"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "it", UID: "uid"}}
	b.ReportAllocs()
	for b.Loop() {
		if ref, err := o.ownerReference(w); err != nil || ref.APIVersion != "bench.operatorkit.io/v1" {
			b.Fatal(ref, err)
		}
	}
}

type emptyCache struct{}

func (emptyCache) Get(string) (any, bool, error) { return nil, false, nil }
func (emptyCache) List() []any                   { return nil }
