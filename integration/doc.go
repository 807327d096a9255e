// Package integration holds the library's integration tests. They run against
// a real kube-apiserver and etcd started by testenv as a child process (one
// server for the whole package, started in TestMain), never against a fake
// clientset.
//
// The sharding tests (shard_test.go) run replicas as processes of their
// own: the test binary started again, which TestMain hands to the replica
// (subprocessMain), so that a replica can be killed with SIGKILL.
//
// The package lives in its own module so that the library's go.mod does not
// require testenv. Run it with `make test-integration`.
package integration
