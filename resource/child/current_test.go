package child_test

import (
	"context"
	"crypto/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/operatorkit/operatorkit/informer"
	"github.com/operatorkit/operatorkit/resource/child"
)

// TestDesiredFromTheCurrentChildAfterItsCreate: a Desired that reads the
// current child from the Cache and keeps it (a generated key, kept while
// valid) found none in a reconciliation that followed the create before
// the watch delivered it, and generated and wrote a second key. The
// Cache returns the create's answer now: one key, one write.
func TestDesiredFromTheCurrentChildAfterItsCreate(t *testing.T) {
	secrets := schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	dyn := fake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{secrets: "SecretList"})
	// The watch lags: it delivers nothing during the test.
	dyn.PrependWatchReactor("*", func(clienttesting.Action) (bool, watch.Interface, error) { return true, watch.NewFake(), nil })
	inf, err := informer.New(informer.Config{Client: dyn, GVR: secrets, Namespace: "demo", ResyncPeriod: -1, Transform: informer.ConvertTo[*corev1.Secret](nil)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	syncCtx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if err := inf.WaitForCacheSync(syncCtx); err != nil {
		t.Fatal(err)
	}

	client := newFakeClient[corev1.Secret]()
	// One API server's versions: the create's answer is newer than the
	// list the informer synced from (the fake's "1").
	client.rv = 100
	r, err := child.New(child.Config[*corev1.Secret, *corev1.Secret]{
		Name: "secret", Client: client.For, Cache: inf, FieldManager: "test-operator",
		Desired: func(_ context.Context, o *corev1.Secret) (*corev1.Secret, error) {
			key := make([]byte, 8)
			if current, ok, err := informer.Get[*corev1.Secret](inf, o.Namespace, "tls"); err != nil {
				return nil, err
			} else if ok {
				key = current.Data["key"] // kept
			} else {
				_, _ = rand.Read(key) // a new one
			}
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls"}, Data: map[string][]byte{"key": key}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := r.EnsureCreated(reconcileCtx(), owner()); err != nil {
			t.Fatal(err)
		}
	}
	if len(client.applies) != 1 {
		t.Errorf("applies = %v, want one: the second reconciliation generated another key", client.applies)
	}
}
