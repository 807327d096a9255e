// Package reliability holds the example operator's fault-injection and
// security tests (test files only): invalid specs, leader election hand-over,
// SIGTERM during a burst, least privilege under the shipped ClusterRole, and
// the metrics server's bind address. They run the webapp-operator binary, or
// the webapp package in-process, against a real kube-apiserver with RBAC
// (testenv). docs/reliability.md lists them with the library's fault tests.
package reliability
