// Package v1alpha1 is the Greeting API: group greeting.example.com,
// version v1alpha1.
//
// +kubebuilder:object:generate=true
// +groupName=greeting.example.com
package v1alpha1

import "k8s.io/apimachinery/pkg/runtime/schema"

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=.
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 crd paths=. output:crd:artifacts:config=../../config/crd

// GroupVersion is greeting.example.com/v1alpha1.
var GroupVersion = schema.GroupVersion{Group: "greeting.example.com", Version: "v1alpha1"}
