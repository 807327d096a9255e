// Package testenv starts a real Kubernetes API server for tests, demos and
// benchmarks: an embedded etcd (go.etcd.io/etcd/server/v3/embed) and the real
// kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver/app), both inside the
// calling process, on random loopback ports. Nothing is downloaded and no
// Docker is needed; everything comes from Go modules.
//
// Choices:
//
//   - Start takes no testing.TB, so one server can serve a whole package from
//     TestMain and the demo command can use it too; New wraps it for a test.
//   - The admin identity (Config) authenticates with a client certificate in
//     system:masters, not with the server's loopback token, so clients keep
//     working across RestartAPIServer (which reuses the address, certificates
//     and etcd).
//   - Options.RBAC turns on RBAC authorization; UserConfig hands out client
//     certificates for named users and groups, for least-privilege tests.
//   - Quiet by default: klog and etcd log nowhere unless Options.LogOutput is
//     set. klog is process global: the last Start decides.
//
// What this server does not have: no controller-manager (no garbage collection
// by owner reference; namespaces never finish terminating: give each test its
// own namespace and never wait for namespace deletion), no service-account
// token controller (the ServiceAccount admission plugin is off), no scheduler
// or kubelet (pods stay Pending; Deployments get no ReplicaSets).
//
// The module is separate from the library because importing k8s.io/kubernetes
// needs a replace line for every k8s.io staging module; see
// hack/replace-block.sh for regenerating them on a Kubernetes version bump.
// The first build takes several minutes (about 8 on 2 cores, 3 GB peak in the
// link step): run packages that import testenv with `go test -p 1`.
package testenv
