package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/resource/child"
)

// TestChildSecretStringData: a Secret child whose desired state sets
// stringData (which the API server merges into data and never stores) is
// created with it, a steady reconciliation sends no request, and a changed
// value in data is drift that the next reconciliation reverts.
func TestChildSecretStringData(t *testing.T) {
	t.Parallel()
	ns := newNamespace(t)
	admin := kubeClient(t)
	kc, counter := countedClient(t)
	inf := childInformer(t, admin.CoreV1().RESTClient(), corev1.SchemeGroupVersion.WithResource("secrets"), &corev1.Secret{}, ns, true)
	owner := childOwner(t, admin, ns)
	password := "hunter2"
	r, err := child.New(child.Config[*corev1.Secret, *corev1.Secret]{
		Name:         "secret",
		Client:       child.Typed(kc.CoreV1().Secrets),
		Cache:        inf,
		FieldManager: childManager,
		Desired: func(context.Context, *corev1.Secret) (*corev1.Secret, error) {
			return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"},
				StringData: map[string]string{"password": password},
				Data:       map[string][]byte{"user": []byte("admin")}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	key := ns + "/creds"
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	s, err := admin.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["password"]) != "hunter2" || string(s.Data["user"]) != "admin" {
		t.Fatalf("created secret data = %v", s.Data)
	}
	waitCached(t, inf, key, s)

	before := counter.Snapshot()
	for range 5 {
		if err := r.EnsureCreated(ctx, owner); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter.Snapshot().Sub(before); got.Total != 0 {
		t.Errorf("5 steady reconciliations sent %d requests (%v), want 0", got.Total, got.ByVerb)
	}

	// Someone changes the password in data: drift, reverted.
	s, err = admin.CoreV1().Secrets(ns).Patch(ctx, "creds", types.MergePatchType, []byte(`{"data":{"password":"b3RoZXI="}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitCached(t, inf, key, s)
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	s, err = admin.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["password"]) != "hunter2" {
		t.Errorf("password after the drift was reverted = %q, want hunter2", s.Data["password"])
	}

	// A new desired value is written.
	password = "new"
	if err := r.EnsureCreated(ctx, owner); err != nil {
		t.Fatal(err)
	}
	s, err = admin.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(s.Data["password"]) != "new" {
		t.Errorf("password after a new desired value = %q, want new", s.Data["password"])
	}
}
