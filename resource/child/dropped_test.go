package child_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource/child"
)

// serviceDefaults is what the API server's defaulting does to a Service's
// session affinity: None when unset, and sessionAffinityConfig dropped
// under None.
func serviceDefaults(s *corev1.Service) {
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.Spec.SessionAffinity == corev1.ServiceAffinityNone {
		s.Spec.SessionAffinityConfig = nil
	}
}

// TestEmptyStructTheServerDropsIsSteady: a Service child with
// sessionAffinityConfig: {} (an empty &corev1.SessionAffinityConfig{})
// under sessionAffinity None is applied as {}, which the API server drops:
// the resource learns that from its apply's answer and does not see the
// field's absence as drift, so the child is written once, not in every
// reconciliation; a Service of another owner of the resource is steady
// from its first apply too, and a difference elsewhere is still drift.
func TestEmptyStructTheServerDropsIsSteady(t *testing.T) {
	client := newFakeClient[corev1.Service]()
	client.defaults = serviceDefaults
	cache := informertest.New()
	r, err := child.New(child.Config[*corev1.Secret, *corev1.Service]{
		Name: "service", Client: client.For, Cache: cache,
		Desired: func(_ context.Context, w *corev1.Secret) (*corev1.Service, error) {
			return &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Name: w.Name},
				Spec: corev1.ServiceSpec{
					Selector:              map[string]string{"app": w.Name},
					Ports:                 []corev1.ServicePort{{Name: "http", Port: 80}},
					SessionAffinity:       corev1.ServiceAffinityNone,
					SessionAffinityConfig: &corev1.SessionAffinityConfig{},
				},
			}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ownerNamed := func(name string) *corev1.Secret {
		w := owner()
		w.Name, w.UID = name, types.UID("uid-"+name)
		return w
	}
	for _, name := range []string{"web", "api"} {
		w := ownerNamed(name)
		if err := r.EnsureCreated(ctx, w); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(client.bodyOf(t, "demo/"+name)), `"sessionAffinityConfig":{}`) {
			t.Fatalf("%s: sessionAffinityConfig: {} not applied", name)
		}
		_ = cache.Add(client.objs["demo/"+name].DeepCopy())
		for i := range 3 {
			if err := r.EnsureCreated(ctx, w); err != nil {
				t.Fatal(err)
			}
			if n := client.appliesOf("demo/" + name); n != 1 {
				t.Fatalf("%s: reconciliation %d: %d applies, want 1: the dropped sessionAffinityConfig was drift", name, i+2, n)
			}
		}
	}

	// Another difference is drift still, and names no dropped field.
	s := client.objs["demo/web"].DeepCopy()
	s.Spec.Selector = map[string]string{"app": "other"}
	_ = cache.Update(s)
	patch, err := r.Plan(ctx, ownerNamed("web"), false)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := patch.UpdateChange()
	if !ok {
		t.Fatal("a changed selector is no drift")
	}
	if got := fmt.Sprint(u.(child.Changes).Describe()); strings.Contains(got, "sessionAffinityConfig") || !strings.Contains(got, `spec.selector[app] "other" → "web"`) {
		t.Errorf("description = %s", got)
	}
}

// TestEmptyStructTheServerKeepsIsDrift: an empty struct the API server
// keeps (a NetworkPolicy peer's podSelector: {}) is not learnt as dropped:
// a peer changed by hand into namespaceSelector: {} is drift, and applied.
func TestEmptyStructTheServerKeepsIsDrift(t *testing.T) {
	client := newFakeClient[networkingv1.NetworkPolicy]()
	cache := informertest.New()
	r, err := child.New(child.Config[*corev1.Secret, *networkingv1.NetworkPolicy]{
		Name: "networkpolicy", Client: client.For, Cache: cache,
		Desired: func(context.Context, *corev1.Secret) (*networkingv1.NetworkPolicy, error) {
			return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: networkingv1.NetworkPolicySpec{
				PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
				Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
			}}, nil
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	np := client.objs["demo/web"].DeepCopy()
	_ = cache.Add(np)
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if n := client.appliesOf("demo/web"); n != 1 {
		t.Fatalf("%d applies of a steady NetworkPolicy, want 1", n)
	}
	np = np.DeepCopy()
	np.Spec.Ingress[0].From[0] = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}}
	_ = cache.Update(np)
	if err := r.EnsureCreated(ctx, owner()); err != nil {
		t.Fatal(err)
	}
	if n := client.appliesOf("demo/web"); n != 2 {
		t.Errorf("%d applies, want 2: a peer turned into namespaceSelector: {} was no drift", n)
	}
}

// appliesOf counts the applies of key.
func (f *fakeClient[T, PT]) appliesOf(key string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, k := range f.applies {
		if k == key {
			n++
		}
	}
	return n
}

// bodyOf returns the last apply body of key.
func (f *fakeClient[T, PT]) bodyOf(t *testing.T, key string) []byte {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	b, ok := f.bodies[key]
	if !ok {
		t.Fatalf("%s not applied", key)
	}
	return b
}
