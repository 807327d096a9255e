package informer

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestMutationShowsCreates: the answer of a create was not returned by Get
// until the watch delivered the object, so a resource after the one that
// created a child (or the next reconciliation, within the watch's lag) did
// not find it: it failed, or, with a Desired that depends on the current
// child (a generated key), generated and wrote another one. Get returns it
// now until the informer has delivered a change at or past its
// resourceVersion: then the cache shows the object, or its delete, which
// is never hidden.
func TestMutationShowsCreates(t *testing.T) {
	cached := widget("ns", "a", nil)
	cached.SetResourceVersion("1")
	client := newFakeClient(cached)
	inf, err := New(Config{Client: client, GVR: widgets, ResyncPeriod: -1, Namespace: "ns", LabelSelector: "app=w"})
	if err != nil {
		t.Fatal(err)
	}
	start(t, inf, client)
	exists := func(key string) bool {
		_, ok, err := inf.Get(key)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(t.Context(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return cond(), nil
		}); err != nil {
			t.Fatalf("waiting for %s: %v", what, err)
		}
	}
	labelled := map[string]string{"app": "w"}

	// Created, not delivered yet: Get returns the answer.
	b := widget("ns", "b", labelled)
	b.SetResourceVersion("10")
	inf.Mutation(b)
	if !exists("ns/b") {
		t.Fatal("Get(ns/b) after the Mutation of its create = not found, want the answer")
	}
	// Delivered, then deleted: the delete is shown.
	if _, err := client.Resource(widgets).Namespace("ns").Create(t.Context(), b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the informer to deliver ns/b", func() bool {
		_, ok, _ := inf.informer.GetIndexer().GetByKey("ns/b")
		return ok
	})
	if err := client.Resource(widgets).Namespace("ns").Delete(t.Context(), "b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the delete of ns/b to be shown", func() bool { return !exists("ns/b") })

	// Created and deleted without the informer seeing either (a relist):
	// shown until the informer delivers a later change.
	c := widget("ns", "c", labelled)
	c.SetResourceVersion("20")
	inf.Mutation(c)
	if !exists("ns/c") {
		t.Fatal("Get(ns/c) after the Mutation of its create = not found, want the answer")
	}
	d := widget("ns", "d", labelled)
	d.SetResourceVersion("25")
	if _, err := client.Resource(widgets).Namespace("ns").Create(t.Context(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("ns/c to go once the informer is past it", func() bool { return !exists("ns/c") })
	// A recorded answer is not kept once the informer is past it, even
	// when nobody asks for it again: it held the created object in memory
	// until a later create's sweep (hundreds of them after a burst).
	g := widget("ns", "g", labelled)
	g.SetResourceVersion("26")
	inf.Mutation(g)
	if _, err := client.Resource(widgets).Namespace("ns").Create(t.Context(), g, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually("the recorded create of ns/g dropped once delivered", func() bool {
		m := inf.mutations.Load()
		m.mu.Lock()
		defer m.mu.Unlock()
		_, recorded := m.creates["ns/g"]
		return !recorded
	})

	// Answers the informer can never deliver are not shown: another
	// namespace, or labels its selector does not select.
	other := widget("other", "e", labelled)
	other.SetResourceVersion("30")
	inf.Mutation(other)
	unlabelled := widget("ns", "f", nil)
	unlabelled.SetResourceVersion("31")
	inf.Mutation(unlabelled)
	if exists("other/e") || exists("ns/f") {
		t.Error("Get returned the answer of a create outside the informer's selection")
	}
}
