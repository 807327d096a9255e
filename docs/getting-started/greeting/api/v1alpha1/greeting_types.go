package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Greeting asks for a ConfigMap that holds a message.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.spec.message`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
type Greeting struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the user asks for.
	Spec GreetingSpec `json:"spec"`
	// Status is what the operator reports.
	// +optional
	Status GreetingStatus `json:"status,omitempty"`
}

// GreetingSpec is the desired state of a Greeting.
type GreetingSpec struct {
	// Message is stored in the ConfigMap under the key "message".
	// +kubebuilder:validation:MinLength=1
	Message string `json:"message"`
}

// GreetingStatus is written by the operator.
type GreetingStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds Ready, Reconciling and Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}
