// Package e2e tests the example as a user runs it: TestDemo builds the demo
// binary with `go build` and runs it; the operator tests start a real API
// server (testenv, with RBAC) and run the webapp-operator binary under the
// shipped minimal ClusterRole, and the operator code in-process to check it
// stops without leaking goroutines.
//
// Run it with a generous -timeout; `make test-e2e` in example/ does. -short
// skips it.
package e2e
