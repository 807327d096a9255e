// Package v1alpha1 holds the WebApp API of the example operator: group
// example.operatorkit.io, version v1alpha1.
//
// The Go types carry kubebuilder markers; controller-gen turns them into the
// CustomResourceDefinition in example/config/crd and into
// zz_generated.deepcopy.go (run `make generate` in example/, or
// `go generate ./...`). Both generated files are committed.
//
// The operator's informer decodes WebApps straight into *WebApp
// (operator.Operator.Informer with ObjectType); objects from a dynamic
// client, or a WebApp that the type cannot hold, arrive as
// *unstructured.Unstructured, and [FromUnstructured] turns them into a
// *WebApp or an error, never a panic, whatever the input (see
// FuzzDecodeWebApp).
//
// +kubebuilder:object:generate=true
// +groupName=example.operatorkit.io
package v1alpha1

//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 object paths=.
//go:generate go run sigs.k8s.io/controller-tools/cmd/controller-gen@v0.23.0 crd:crdVersions=v1 paths=. output:crd:artifacts:config=../../config/crd
