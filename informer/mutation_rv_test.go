package informer

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestMutationNonIntegerResourceVersion: the mutation cache compares
// resourceVersions as integers, and panicked in a later Get when one was
// not (an aggregated API server's, a fake's): Mutation ignores such an
// answer, and Get falls back to the cache's object when the cached one has
// such a version.
func TestMutationNonIntegerResourceVersion(t *testing.T) {
	cached := widget("ns", "a", nil)
	cached.SetResourceVersion("1")
	odd := widget("ns", "b", nil)
	odd.SetResourceVersion("v-b")
	client := newFakeClient(cached, odd)
	inf, err := New(Config{Client: client, GVR: widgets, ResyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf, client)

	written := widget("ns", "a", nil)
	written.SetResourceVersion("not-an-int")
	inf.Mutation(written)
	got, ok, err := inf.Get("ns/a")
	if err != nil || !ok || got.(interface{ GetResourceVersion() string }).GetResourceVersion() != "1" {
		t.Errorf("Get(ns/a) after a Mutation with resourceVersion not-an-int = %v, %v, %v; want the cached object (1)", got, ok, err)
	}

	// An integer answer for an object cached with another kind of version.
	answer := widget("ns", "b", nil)
	answer.SetResourceVersion("5")
	inf.Mutation(answer)
	got, ok, err = inf.Get("ns/b")
	if err != nil || !ok || got == nil {
		t.Errorf("Get(ns/b) = %v, %v, %v; want an object, no panic", got, ok, err)
	}
}

// TestMutationTypedNil: Mutation of a nil pointer of the cached type (the
// answer of a failed write, passed on unchecked) panicked in its getters;
// it is ignored, as a nil obj is.
func TestMutationTypedNil(t *testing.T) {
	cached := widget("ns", "a", nil)
	cached.SetResourceVersion("1")
	client := newFakeClient(cached)
	inf, err := New(Config{Client: client, GVR: widgets, ResyncPeriod: -1})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf, client)
	inf.Mutation((*unstructured.Unstructured)(nil))
	if got, ok, err := inf.Get("ns/a"); err != nil || !ok || got.(*unstructured.Unstructured).GetResourceVersion() != "1" {
		t.Errorf("Get(ns/a) after Mutation(nil pointer) = %v, %v, %v; want the cached object (1)", got, ok, err)
	}
}
