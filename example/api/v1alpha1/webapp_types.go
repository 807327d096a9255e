package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types written by the operator into WebAppStatus.Conditions (by
// operatorkit's Framework, following the kstatus conventions).
const (
	// ConditionReady is True when every child object (ConfigMap, Deployment
	// and, in release 2, Service) matches the spec of the observed
	// generation, and False with the failure's reason and message
	// otherwise. It does not wait for pods: see the webapp package doc.
	ConditionReady = "Ready"
	// ConditionReconciling is True, with the error as message, while a
	// failed reconciliation is retried with backoff; absent otherwise.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when the operator gave up until the
	// WebApp changes (reason InvalidSpec: a spec it cannot use); absent
	// otherwise.
	ConditionStalled = "Stalled"
)

// WebApp is a static web site: a ConfigMap holding its content, a Deployment
// serving it and, from operator release 2 on, a Service in front of it.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=wa,categories=all
// +kubebuilder:printcolumn:name="Image",type=string,JSONPath=`.spec.image`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.spec.replicas`
// +kubebuilder:printcolumn:name="Release",type=string,JSONPath=`.metadata.labels.example\.operatorkit\.io/release`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type WebApp struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired state, written by users.
	Spec WebAppSpec `json:"spec"`
	// Status is the observed state, written by the operator.
	// +optional
	Status WebAppStatus `json:"status,omitempty"`
}

// WebAppSpec is the desired state of a WebApp.
type WebAppSpec struct {
	// Image is the container image that serves the content on port 8080,
	// for example "nginxinc/nginx-unprivileged:1.27". The schema only asks
	// for a non-empty string; the operator checks the reference syntax and
	// reports a bad one in the Stalled condition (reason InvalidSpec).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image"`
	// Replicas is the number of pods of the Deployment.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// Content is the page served as index.html, stored in the ConfigMap.
	// +kubebuilder:validation:MaxLength=262144
	// +optional
	Content string `json:"content,omitempty"`
}

// WebAppStatus is the observed state of a WebApp, written by the operator.
type WebAppStatus struct {
	// ObservedGeneration is the metadata.generation of the spec that the
	// conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions holds the Ready, Reconciling and Stalled conditions.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebAppList is a list of WebApps.
//
// +kubebuilder:object:root=true
type WebAppList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the WebApps.
	Items []WebApp `json:"items"`
}
