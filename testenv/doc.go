// Package testenv starts a real Kubernetes API server for tests, demos and
// benchmarks: the real kube-apiserver (k8s.io/kubernetes/cmd/kube-apiserver/app)
// with an embedded etcd, as a child process on random loopback ports. Nothing
// is downloaded and no Docker is needed: the server program is built from Go
// modules, once, and cached.
//
// # Using it in your own module
//
// testenv imports only client-go and modules client-go requires
// (apimachinery, sigs.k8s.io/yaml), goleak and the standard library, so
// your go.mod needs nothing but the require line (no replace block):
//
//	go get github.com/operatorkit/operatorkit/testenv
//
//	func TestMyOperator(t *testing.T) {
//		// Stopped in t.Cleanup; the CRDs that controller-gen wrote are
//		// installed and served when New returns.
//		env := testenv.New(t, testenv.Options{CRDs: []string{"config/crd/bases"}})
//		// ... run the operator against env.Config() ...
//		if _, err := env.Apply(t.Context(), "config/samples/my-app.yaml"); err != nil {
//			t.Fatal(err)
//		}
//		// Ready True for the object's current generation.
//		if _, err := env.WaitReady(t.Context(), myAppsGVR, "default", "my-app"); err != nil {
//			t.Fatal(err)
//		}
//	}
//
// For a whole package, start one server in TestMain with Start and Stop it
// after m.Run. The first Start on a machine builds the server program (about
// 8 minutes on 2 cores with empty Go caches, a minute with a warm build
// cache) and says so on stderr; later starts take 2 to 3 seconds.
//
// # How the server program is built and run
//
//   - The program's source (apiserver/main.go) and its module files
//     (apiserver/go.mod.txt, apiserver/go.sum.txt, with the replace block
//     that k8s.io/kubernetes needs for its staging modules) are embedded in
//     this package. Build writes them into a cache entry keyed by their hash
//     and the Go version (os.UserCacheDir()/operatorkit-testenv, or
//     EnvCacheDir) and runs `go build` there, with GOGC=400 unless the
//     caller's environment sets GOGC (the compiler and linker then spend
//     about a fifth less CPU on garbage collection, for a few hundred MB
//     more memory), and with -trimpath and -gcflags when the caller's
//     GOFLAGS has them (they key the build cache's entries of the packages
//     the server shares with the caller's builds; the rest of GOFLAGS is
//     the caller's module's business). EnvAPIServer names a program built
//     elsewhere instead.
//   - Concurrent first builds (parallel test packages) do not collide: the
//     cache entry is locked with flock while it is built, the others wait and
//     use the result, and the finished program is renamed into place. The
//     temporaries of a build killed with its process (the go command's
//     work directory, a half-written program) are removed by the next
//     build of the entry.
//   - The cache does not grow for ever (each entry holds a program of
//     about 120 MB, and each Kubernetes bump or Go upgrade makes a new
//     one): it is pruned as Go's build cache is. Build marks the entry it
//     uses (the time of its file "used", refreshed at most once an hour,
//     under the entry's lock: a program that another process is pruning is
//     built again, never returned to be removed before it starts), and
//     removes the other entries not used for PruneAfter, a week: when it
//     builds a new entry, and on a use at most once a day. It skips an
//     entry that another process is building (holds its lock) and
//     anything not named as entries are (go1.26.8-14b18b0694268a6f),
//     symbolic links too; where flock is missing nothing is removed, and
//     with EnvAPIServer set nothing is built or removed.
//   - The child process prints its address when /readyz answers and takes
//     "restart" and "stop" on stdin. It never outlives the test process: on
//     Linux the kernel sends it SIGTERM when its parent dies
//     (PR_SET_PDEATHSIG), and on every platform it shuts down when its stdin
//     closes, which happens when the parent exits however it exits (a crash, a
//     `go test -timeout` panic, SIGKILL). It then removes its directory and
//     exits within 10 seconds. Only a kill of both at once (the whole process
//     tree, the OOM killer) leaves the directory, with etcd's data, behind:
//     the next Start in the same parent directory removes it (its process
//     holds an flock on the directory's .lock while it runs; where flock is
//     missing nothing is removed). On Linux it runs in a process group of its
//     own, so that a terminal's Ctrl-C reaches the test process (or program)
//     only: one that handles the interrupt keeps its server until it stops it.
//
// Choices:
//
//   - Start takes no testing.TB, so one server can serve a whole package from
//     TestMain and the demo command can use it too; New wraps it for a test.
//   - testenv creates the certificates: the admin identity (Config)
//     authenticates with a client certificate in system:masters, not with a
//     token, so clients keep working across RestartAPIServer (which keeps
//     the address, the certificates and etcd's data: only the kube-apiserver
//     restarts).
//   - Options.RBAC turns on RBAC authorization; UserConfig hands out client
//     certificates for named users and groups, for least-privilege tests.
//   - Options.CRDs (and InstallCRDs, later) take the manifest files or
//     directories a project already has, as envtest's CRD paths do, and
//     wait until the API server's discovery lists their resources, so a
//     test needs no polling before its first object. They go through the
//     dynamic client with server-side apply (installing again updates), so
//     testenv needs no apiextensions client. Start reads them before it
//     builds or starts anything: a wrong path fails at once. Apply does
//     what `kubectl apply --server-side -f` does for any other manifest
//     (samples, fixtures), with a discovery REST mapper from client-go.
//   - WaitReady waits for the status a Framework with Conditions writes
//     (Ready True for the object's current generation, kstatus's Current),
//     through the dynamic client, so it fits any operator that keeps such
//     conditions; its error says what the object's status last said, and
//     a current Stalled condition ends it at once. WaitCondition waits the
//     same way for any other condition, status and reason (Ready False
//     with reason SecretNotFound, Stalled True, Reconciling).
//   - Quiet by default: the server's logs go nowhere unless Options.LogOutput
//     is set.
//   - LeakCheck is goleak over the goroutines started since the call: the
//     server's goroutines are in another process, so nothing else needs
//     ignoring.
//
// What this server does not have: no controller-manager (no garbage collection
// by owner reference; namespaces never finish terminating: give each test its
// own namespace and never wait for namespace deletion, or, to play the
// namespace controller once the namespace is empty, remove its finalizer
// with the clientset's Namespaces().Finalize and it goes), no service-account
// token controller (the ServiceAccount admission plugin is off), no scheduler
// or kubelet (pods stay Pending; Deployments get no ReplicaSets; Jobs get no
// pods and never finish: to play the Job controller, write the Job's status
// with the clientset's Jobs().UpdateStatus, which the API server refuses for
// a finished Job without status.startTime, and without condition
// SuccessCriteriaMet True and status.completionTime beside Complete True, or
// FailureTarget True beside Failed True, as integration/migration_test.go
// does).
//
// A Kubernetes version bump changes apiserver/go.mod.txt and go.sum.txt:
// hack/testenv-apiserver-mod.sh regenerates them, replace block included,
// and gives this module's go.mod the server's versions of the modules both
// build (client-go, k8s.io/api, golang.org/x/net, protobuf, ...): a package
// built with other versions of its dependencies is compiled again, and
// cmd/testenv compiled all of k8s.io/api a second time on a cold machine
// while they differed (TestModuleVersionsMatchServer). The same holds for a
// user's module: its builds without the race detector share the server's
// compiled packages when it selects the same versions.
package testenv
