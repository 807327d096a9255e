package testenv_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/testenv"
)

// The TestMain of a package of integration tests starts one API server,
// with the project's CRDs served, for all its tests and stops it after
// them. It starts a kube-apiserver (building it first on a new machine), so
// it is compiled but not run.
func ExampleStart() {
	var shared *rest.Config // what the package's tests connect with
	testMain := func(m *testing.M) int {
		// No deadline: the first Start on a machine builds the server.
		// Paths are relative to the test's package directory.
		env, err := testenv.Start(context.Background(), testenv.Options{CRDs: []string{"../config/crd/bases"}})
		if err != nil {
			fmt.Fprintln(os.Stderr, "start test environment:", err)
			return 1
		}
		defer env.Stop()
		shared = env.Config()
		return m.Run()
	}
	// func TestMain(m *testing.M) { os.Exit(testMain(m)) }
	_, _ = testMain, shared
}

// A test of its own gets a server stopped in t.Cleanup: it runs the
// operator against it, applies a sample and waits until the operator
// reports it Ready. It starts a kube-apiserver, so it is compiled but not
// run.
func ExampleNew() {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	runOperator := func(ctx context.Context, cfg *rest.Config) error { <-ctx.Done(); return nil } // the operator under test
	testWidget := func(t *testing.T) {
		env := testenv.New(t, testenv.Options{CRDs: []string{"../config/crd/bases"}})
		checkLeaks := testenv.LeakCheck(t)
		ctx, stop := context.WithCancel(t.Context())
		done := make(chan error)
		go func() { done <- runOperator(ctx, env.Config()) }()

		objs, err := env.Apply(ctx, "../config/samples/widget.yaml")
		if err != nil {
			t.Fatal(err)
		}
		w := objs[0]
		if _, err := env.WaitReady(ctx, widgets, w.GetNamespace(), w.GetName()); err != nil {
			t.Fatal(err) // says what the status last said
		}
		kube, err := kubernetes.NewForConfig(env.Config())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kube.CoreV1().ConfigMaps(w.GetNamespace()).Get(ctx, w.GetName(), metav1.GetOptions{}); err != nil {
			t.Errorf("the widget's ConfigMap: %v", err)
		}

		stop()
		if err := <-done; err != nil {
			t.Errorf("operator: %v", err)
		}
		checkLeaks()
	}
	_ = testWidget // func TestWidget(t *testing.T)
}

// With RBAC on, UserConfig gives a test a least-privilege identity; here
// one that no rule allows anything. It starts a kube-apiserver, so it is
// compiled but not run.
func ExampleEnv_UserConfig() {
	testForbidden := func(t *testing.T) {
		env := testenv.New(t, testenv.Options{RBAC: true})
		cfg, err := env.UserConfig("alice", "dev-team")
		if err != nil {
			t.Fatal(err)
		}
		alice, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		_, err = alice.CoreV1().Secrets("default").List(t.Context(), metav1.ListOptions{})
		if !apierrors.IsForbidden(err) {
			t.Fatalf("alice listed secrets: got %v, want forbidden", err)
		}
	}
	_ = testForbidden // func TestForbidden(t *testing.T)
}
