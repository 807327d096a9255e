package child

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Tier is a string type embedded in a spec: encoding/json sends it as a
// field named "Tier", not inlined.
type Tier string

type specWithTier struct {
	Tier
	Size int `json:"size,omitempty"`
}

type withEmbeddedString struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              specWithTier `json:"spec"`
}

// roundTrip applies the payload of desired to an empty object, as the API
// server stores it (decoded back), and compares desired with the result:
// the comparison and the payload must agree, or the child is written in
// every reconciliation.
func roundTrip[T any](t *testing.T, name string, desired *T) {
	t.Helper()
	body, err := json.Marshal(objectPayload(reflect.ValueOf(desired).Elem(), "v1", "X"))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	stored := new(T)
	if err := json.Unmarshal(body, stored); err != nil {
		t.Fatalf("%s: decode %s: %v", name, body, err)
	}
	if fields, _ := diffObject(reflect.ValueOf(desired).Elem(), reflect.ValueOf(stored).Elem(), false); len(fields) > 0 {
		t.Errorf("%s: payload %s; the stored object still differs: %+v", name, body, fields)
	}
}

// TestPayloadAndComparisonAgree: what the comparison looks at is what the
// payload sends, for the cases an audit found apart.
func TestPayloadAndComparisonAgree(t *testing.T) {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	roundTrip(t, "maxSurge: 0", &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Strategy: appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &one},
	}}})
	roundTrip(t, "PodDisruptionBudget maxUnavailable: 0", &policyv1.PodDisruptionBudget{Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &zero}})
	roundTrip(t, "emptyDir sizeLimit: zero quantity", &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{
		Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: &resource.Quantity{}}},
	}}}})
	roundTrip(t, "an embedded string type", &withEmbeddedString{Spec: specWithTier{Tier: "gold", Size: 1}})
	roundTrip(t, "a pointer to a zero time (null in JSON: not set)", &metav1.ObjectMeta{Name: "x", DeletionTimestamp: &metav1.Time{}})
}

// TestListKeyedOnMoreThanTheMergeKey: a Service with port 53 over UDP and
// TCP, a container likewise, and two spread constraints on one topology
// key: the API server keys these lists on more than the merge key, so the
// stored list holds the merge key twice; each desired element is compared
// with its own.
func TestListKeyedOnMoreThanTheMergeKey(t *testing.T) {
	svc := &corev1.Service{Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{
		{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP},
		{Name: "dns-tcp", Port: 53, Protocol: corev1.ProtocolTCP},
	}}}
	roundTrip(t, "Service ports", svc)
	// The server may store them in another order.
	stored := svc.DeepCopy()
	stored.Spec.Ports[0], stored.Spec.Ports[1] = stored.Spec.Ports[1], stored.Spec.Ports[0]
	if fields, _ := diffObject(reflect.ValueOf(svc).Elem(), reflect.ValueOf(stored).Elem(), false); len(fields) > 0 {
		t.Errorf("Service ports in the other order: %+v", fields)
	}
	// A real difference is still found, on the element that has it.
	stored.Spec.Ports[0].Name = "renamed"
	if fields, _ := diffObject(reflect.ValueOf(svc).Elem(), reflect.ValueOf(stored).Elem(), false); len(fields) != 1 || fields[0].Path != "spec.ports[53].name" {
		t.Errorf("renamed port: fields %+v, want one at spec.ports[53].name", fields)
	}
	roundTrip(t, "container ports", &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "dns", Ports: []corev1.ContainerPort{
		{ContainerPort: 53, Protocol: corev1.ProtocolUDP}, {ContainerPort: 53, Protocol: corev1.ProtocolTCP},
	}}}}})
	roundTrip(t, "topologySpreadConstraints", &corev1.Pod{Spec: corev1.PodSpec{TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
		{TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule, MaxSkew: 1},
		{TopologyKey: "zone", WhenUnsatisfiable: corev1.ScheduleAnyway, MaxSkew: 2},
	}}})
}

// TestPointerToAnEmptyStruct: a pointer to an empty struct is a value of
// its own in Kubernetes ("podSelector: {}" selects every pod, a nil one
// none): the payload sends it as {}, as encoding/json does, and a current
// object without it (a peer turned into "namespaceSelector: {}", every
// pod of every namespace) differs.
func TestPointerToAnEmptyStruct(t *testing.T) {
	desired := &networkingv1.NetworkPolicy{Spec: networkingv1.NetworkPolicySpec{
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{}}}}},
	}}
	body, err := json.Marshal(objectPayload(reflect.ValueOf(desired).Elem(), "networking.k8s.io/v1", "NetworkPolicy"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"ingress":[{"from":[{"podSelector":{}}]}]`; !strings.Contains(string(body), want) {
		t.Errorf("payload %s, want it to hold %s", body, want)
	}
	roundTrip(t, "an ingress peer of every pod", desired)

	opened := desired.DeepCopy()
	opened.Spec.Ingress[0].From[0] = networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{}}
	fields, _ := diffObject(reflect.ValueOf(desired).Elem(), reflect.ValueOf(opened).Elem(), false)
	if len(fields) != 1 || fields[0].Path != "spec.ingress[0].from[0].podSelector" {
		t.Errorf("a peer of every namespace instead: fields %+v, want one at spec.ingress[0].from[0].podSelector", fields)
	}
	if fields, _ := diffObject(reflect.ValueOf(desired).Elem(), reflect.ValueOf(opened).Elem(), true); len(fields) == 0 {
		t.Error("a peer of every namespace instead: no difference found by the walk that stops at the first")
	}
}
