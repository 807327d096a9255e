// Package integration holds the library's integration tests. They run against
// a real kube-apiserver and etcd started in-process by testenv (one server for
// the whole package, started in TestMain), never against a fake clientset.
//
// The package lives in its own module because testenv imports
// k8s.io/kubernetes, which must never become a dependency of the library.
// Run it with `make test-integration` (go test -p 1: the test binary links the
// whole API server).
package integration
