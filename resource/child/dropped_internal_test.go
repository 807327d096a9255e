package child

import (
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestShapeIs: shapeIs matches a path against shapeOf's form without
// formatting it, every key and index as "[]".
func TestShapeIs(t *testing.T) {
	path := []segment{{name: "spec"}, {name: "ingress"}, {index: 0}, {name: "from"}, {key: reflect.ValueOf("x")}, {name: "podSelector"}}
	if got, want := shapeOf(path), "spec.ingress[].from[].podSelector"; got != want {
		t.Fatalf("shapeOf = %q, want %q", got, want)
	}
	for _, s := range []string{"spec.ingress[].from[].podSelector"} {
		if !shapeIs(path, s) {
			t.Errorf("shapeIs(%q) = false", s)
		}
	}
	for _, s := range []string{"", "spec", "spec.ingress[].from[]", "spec.ingress[].from[].podSelectorX", "spec.ingress.from.podSelector",
		"spec.ingress[].from[].namespaceSelector", "specingress[].from[].podSelector", "spec.ingress[]from[].podSelector"} {
		if shapeIs(path, s) {
			t.Errorf("shapeIs(%q) = true", s)
		}
	}
}

// TestLearnDropped: learn records the pointers to empty structs that the
// answer lacks, and only those; the comparison then does not count their
// absence, but still what differs there or elsewhere.
func TestLearnDropped(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{SessionAffinity: corev1.ServiceAffinityNone, SessionAffinityConfig: &corev1.SessionAffinityConfig{}}}
	answer := svc.DeepCopy()
	answer.Spec.SessionAffinityConfig = nil
	var dropped droppedPaths
	if _, _, absent := diffChild(reflect.ValueOf(svc).Elem(), reflect.ValueOf(answer).Elem(), false, &dropped); !absent {
		t.Error("no empty struct absent found before learning")
	}
	learn(&dropped, reflect.ValueOf(svc).Elem(), reflect.ValueOf(answer).Elem())
	if got := *dropped.paths.Load(); !slices.Equal(got, []string{"spec.sessionAffinityConfig"}) {
		t.Fatalf("learnt %q", got)
	}
	learn(&dropped, reflect.ValueOf(svc).Elem(), reflect.ValueOf(answer).Elem())
	if got := *dropped.paths.Load(); len(got) != 1 {
		t.Fatalf("learnt again: %q", got)
	}
	for _, first := range []bool{false, true} {
		if f, _, absent := diffChild(reflect.ValueOf(svc).Elem(), reflect.ValueOf(answer).Elem(), first, &dropped); len(f) != 0 || absent {
			t.Errorf("first %v: dropped field is drift: %+v (absent %v)", first, f, absent)
		}
	}
	// A value that is not {} is compared as ever.
	clientIP := svc.DeepCopy()
	clientIP.Spec.SessionAffinityConfig.ClientIP = &corev1.ClientIPConfig{}
	if f, _, _ := diffChild(reflect.ValueOf(clientIP).Elem(), reflect.ValueOf(answer).Elem(), false, &dropped); len(f) != 1 || f[0].Path != "spec.sessionAffinityConfig.clientIP" {
		t.Errorf("clientIP: {} absent: %+v", f)
	}
	// Without the record, as diffObject compares, it is drift.
	if f, _ := diffObject(reflect.ValueOf(svc).Elem(), reflect.ValueOf(answer).Elem(), false); len(f) != 1 {
		t.Errorf("without the record: %+v", f)
	}

	// Kept ones are not learnt; one dropped from one element of a list is
	// learnt at the list's shape, the elements matched by merge key.
	np := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
	}}
	var kept droppedPaths
	learn(&kept, reflect.ValueOf(np).Elem(), reflect.ValueOf(np.DeepCopy()).Elem())
	if got := kept.paths.Load(); got != nil {
		t.Errorf("learnt from an answer that keeps them: %q", *got)
	}
	pod := &corev1.PodSpec{Containers: []corev1.Container{{Name: "a", SecurityContext: &corev1.SecurityContext{}}, {Name: "b"}}}
	podAnswer := &corev1.PodSpec{Containers: []corev1.Container{{Name: "b"}, {Name: "a"}}}
	var inList droppedPaths
	learn(&inList, reflect.ValueOf(pod).Elem(), reflect.ValueOf(podAnswer).Elem())
	if got := *inList.paths.Load(); !slices.Equal(got, []string{"containers[].securityContext"}) {
		t.Errorf("learnt %q", got)
	}
	if f, _, _ := diffChild(reflect.ValueOf(pod).Elem(), reflect.ValueOf(podAnswer).Elem(), false, &inList); len(f) != 0 {
		t.Errorf("dropped in a list: %+v", f)
	}
}

// TestDroppedIsBounded: no more than maxDropped paths are recorded.
func TestDroppedIsBounded(t *testing.T) {
	var p droppedPaths
	for i := range maxDropped + 5 {
		p.add([]string{string(rune('a' + i))})
	}
	if n := len(*p.paths.Load()); n != maxDropped {
		t.Errorf("%d paths recorded, want %d", n, maxDropped)
	}
}
