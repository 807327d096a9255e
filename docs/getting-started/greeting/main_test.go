package main

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/go-kit/log"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/testenv"
)

// TestGreeting runs the operator against a real API server: a Greeting gets
// its ConfigMap and Ready, the ConfigMap follows a new message, and goes
// when the Greeting is deleted.
func TestGreeting(t *testing.T) {
	t.Cleanup(testenv.LeakCheck(t)) // runs last: nothing the test started is left
	// kube-apiserver and etcd, stopped when the test ends, with the CRD that
	// controller-gen wrote, installed and served.
	env := testenv.New(t, testenv.Options{CRDs: []string{"config/crd"}})

	// The operator, in this process: no leader election, no HTTP endpoints.
	config := operator.Config{Name: name, RESTConfig: env.Config(), Logger: log.NewLogfmtLogger(os.Stderr)}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, config) }()
	t.Cleanup(func() { // before the API server stops
		stop()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
	})

	kube := kubernetes.NewForConfigOrDie(env.Config())
	greetingClient := dynamic.NewForConfigOrDie(env.Config()).Resource(greetings).Namespace("default")
	// The sample, as `kubectl apply -f config/samples` creates it.
	if _, err := env.Apply(t.Context(), "config/samples"); err != nil {
		t.Fatal(err)
	}
	messageIs := func(want string) wait.ConditionWithContextFunc {
		return func(ctx context.Context) (bool, error) {
			cm, err := kube.CoreV1().ConfigMaps("default").Get(ctx, "hello", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			return err == nil && cm.Data["message"] == want, err
		}
	}
	// Ready, for the Greeting's current generation.
	ready := func() {
		t.Helper()
		if _, err := env.WaitReady(t.Context(), greetings, "default", "hello"); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "ConfigMap with the message", messageIs("Hello, world!"))
	ready()

	patch := []byte(`{"spec":{"message":"Bonjour"}}`)
	if _, err := greetingClient.Patch(t.Context(), "hello", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "ConfigMap with the new message", messageIs("Bonjour"))
	ready()

	if err := greetingClient.Delete(t.Context(), "hello", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The test API server has no garbage collector: the operator deletes
	// the ConfigMap, then removes its finalizer, and the Greeting goes.
	eventually(t, "Greeting and ConfigMap deleted", func(ctx context.Context) (bool, error) {
		_, err := greetingClient.Get(ctx, "hello", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return false, nil
		}
		_, err = kube.CoreV1().ConfigMaps("default").Get(ctx, "hello", metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
}

// eventually polls cond until it returns true, and fails the test when it
// returns an error or a minute passes.
func eventually(t *testing.T, what string, cond wait.ConditionWithContextFunc) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(t.Context(), 50*time.Millisecond, time.Minute, true, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
