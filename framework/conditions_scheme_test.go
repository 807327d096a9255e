package framework

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/operatorkit/operatorkit/informer/informertest"
)

// gadget is a custom resource's Go type that is not laid out as
// kubebuilder lays it out (its status has no observedGeneration), which
// its operator registers in client-go's scheme, as client-go's
// sample-controller does for its Events.
type gadget struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Status            gadgetStatus `json:"status,omitempty"`
}

type gadgetStatus struct {
	Replicas int32 `json:"replicas,omitempty"`
}

func (g *gadget) DeepCopyObject() runtime.Object {
	c := *g
	g.ObjectMeta.DeepCopyInto(&c.ObjectMeta)
	return &c
}

// TestNewAcceptsConditionsOfACustomKindInClientGoScheme: New refused
// Conditions for a custom resource whose Go type an operator had
// registered in client-go's scheme (for its Events, as client-go's
// sample-controller does) when that type's status had no
// observedGeneration or conditions field, calling it "a kind built into
// Kubernetes": the Framework writes such a status (its CRD's schema
// decides), so it is accepted; only Kubernetes' own kinds are refused.
func TestNewAcceptsConditionsOfACustomKindInClientGoScheme(t *testing.T) {
	gv := schema.GroupVersion{Group: "gadgets.schemed.test.operatorkit.io", Version: "v1"}
	clientgoscheme.Scheme.AddKnownTypeWithName(gv.WithKind("Gadget"), &gadget{})
	c := Config{Name: "op", Informer: informertest.New(), ResourceRouter: testRouter(t, nil, &funcResource{name: "r"}),
		Client: newStatusServer(object("a", 1, nil)).client(), Resource: gv.WithResource("gadgets"), Conditions: true}
	if _, err := New(c); err != nil {
		t.Fatalf("New() of a custom kind in client-go's scheme with Conditions = %v, want nil", err)
	}
}
