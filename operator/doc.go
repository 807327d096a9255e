// Package operator runs an operator process: one or more Frameworks, the
// informers they and their child watches share, leader election on a Lease,
// one HTTP server for /metrics, /healthz, /readyz and the debug pages, and
// the flags and logs of a binary. It is what a main function needs besides
// the operator's own resources:
//
//	var opts operator.Options
//	opts.LeaderElectionID = "webapp-operator"
//	opts.BindFlags(flag.CommandLine)
//	flag.Parse()
//	logger, err := opts.NewLogger(os.Stderr) // after opts.Validate()
//	operator.RedirectKlog(logger)            // client-go logs in the same format
//	cfg, _, err := opts.RESTConfig()         // --kubeconfig, $KUBECONFIG, in-cluster
//	op, err := operator.New(opts.Config("webapp-operator", cfg, logger))
//	inf, err := op.Informer(informer.Config{GVR: webappGVR})
//	f, err := op.NewFramework(framework.Config{Informer: inf, ...}) // the Operator's clients, registry, events; added
//	configMaps, err := op.Informer(informer.Config{GVR: configMapGVR})
//	op.Owns(f, webappKind, configMaps)
//	err = op.Run(signalContext)
//
// [Command] is all of that as a binary's command line, with
// [FrameworkOptions] (--namespace, --workers, --dry-run, ...), a preflight
// hook and a "plan" subcommand: the binary gives its name and a function
// that adds its Framework (see the example operator's
// cmd/webapp-operator). [Preflight] is the usual preflight: the API server
// answers, the CRD is served, and the identity holds the [Permissions] the
// binary needs of its ClusterRole's rules, each problem one line.
//
// # Defaults
//
// What a main function gets without asking:
//
//   - Clients: [Operator.NewFramework] gives the Framework the Operator's
//     clients, built once from Config.RESTConfig: a metadata client
//     (Metadata) for the finalizer patches and the status applies, which
//     the API server then answers with the object's metadata only, not the
//     whole object to decode, and the dynamic client (Dynamic) for the
//     rest (a Guard's lock, and the status writes of a Framework with
//     DisableFinalizers, which gets no metadata client). A field set in
//     framework.Config is kept.
//   - Typed caches: [Operator.Informer] with informer.Config.ObjectType set
//     (&corev1.ConfigMap{}, or your CRD's Go type) and no client decodes
//     each event once, straight into that type, on the Operator's
//     rest.Config: no scheme, no AddToScheme, no conversion from a map.
//     Without ObjectType it reads *unstructured.Unstructured through the
//     dynamic client. ObjectType &metav1.PartialObjectMetadata{} makes a
//     metadata-only cache, read through a metadata client: for objects
//     that only wake yours (Watches, References, Owns), it holds their
//     metadata, never their content.
//   - Child watches: [Operator.Owns], [Operator.References] and [Operator.Watches] skip resyncs and
//     the echoes of the operator's own writes (see below); a handler of
//     your own that calls framework.Framework.Enqueue gets the same from
//     [OwnWrites.Filter].
//   - Client-side rate limit: [Options.RESTConfig] sets DefaultKubeAPIQPS
//     (50) requests per second with bursts of DefaultKubeAPIBurst (100),
//     or --kube-api-qps and --kube-api-burst, for each client the Operator
//     builds (dynamic, typed, metadata, and each typed or metadata-only
//     cache's: one limiter each). A rest.Config
//     made otherwise keeps its own QPS and Burst, and client-go's 5 and 10
//     when they are zero.
//
// # Sharding
//
// With Config.Sharding the replicas share the work instead of waiting for
// the leader: each reconciles its share of the objects of
// Sharding.Resources, and no object is reconciled by two replicas at once.
// Each replica holds a member Lease; the replica holding the leader
// election Lease assigns each object to a live replica by a consistent hash
// of its key and writes that replica's identity into the object's shard
// label, which the replicas' informers select on (so a replica's cache
// holds its share only; the assigner's caches only the objects without an
// owner). An object moves only after its owner agreed: the
// assigner sets the drain label, the owner stops reconciling the object
// (framework.Framework.Release waits for the reconciliation in flight) and
// removes both labels, and only then is the object labelled for its new
// owner. The objects of a replica whose member Lease expired move at once
// (it stopped itself at RenewDeadline), once a read of the Lease from the
// API server confirmed it was not renewed, and the assigner deletes that
// Lease; a replica that stops cleanly deletes
// its Lease after its last reconciliation. The children of the objects
// follow them when their kinds are in Sharding.Children and their child
// resources copy the shard label ([Operator.ShardLabels] as
// child.Config.OwnerLabels): each replica then caches only the children
// of its share. /readyz has a "shard-membership"
// check; the operatorkit_shard_* metrics count members, objects per shard,
// moves and hand-over times. See docs/scaling.md for when to shard, the
// limits, and figures.
//
// # Plans
//
// [Operator.Plan] is a one-off dry run: it starts only the shared informers,
// waits for their caches, and returns framework.Framework.Plan of each
// object (what a reconciliation would change now, field by field for
// resource/child resources), writing nothing. Command's plan subcommand
// prints it.
//
// # Guarantees
//
// Start order: Run opens the HTTP listeners first (a busy or invalid address
// fails Run at once, before anything else starts), then ensures the
// Frameworks' CRDs (framework.Config.CRD, and with
// framework.Config.MigrateStorage migrates their stored objects to the
// storage version, in every replica, before leader election), then starts
// every shared informer and waits for their caches (at most Config.CacheSyncTimeout; a
// list the API server refuses for good, such as a field selector it does
// not support, fails Run at once), then (with leader election) campaigns
// for the Lease, and boots the Frameworks only while it leads. Caches are warm before leading, so a
// replica that takes over starts reconciling at once.
//
// Shutdown order, when Run's context ends: the Frameworks stop taking work
// and their reconciliations in flight finish (bounded by
// Config.ShutdownTimeout); then the Lease is released, so that another
// replica takes over at once but never while this one may still write (a
// shutdown past ShutdownTimeout returns an error at ShutdownTimeout and
// keeps renewing the Lease until the last reconciliation ended: a process
// that exits then leaves it to expire); then the informers stop; then the HTTP
// server. Run returns nil after a clean stop, and no goroutine it started is
// left. An HTTP server that stops serving while Run runs stops the
// operator in the same order, and Run returns its error: a replica without
// probes or metrics is not one to keep running.
//
// Losing the Lease (no renewal succeeded within the renew deadline: the
// API server unreachable, or another holder), or with sharding the member
// Lease, stops reconciling at once, before the Lease can expire for the
// other replicas (not only once client-go's elector gave up releasing it,
// which an API server that does not answer holds up): the Frameworks'
// context ends and so does the context of every reconciliation in flight
// (framework.Framework.Abort), since another replica may take over before
// they would have finished; Run waits
// for them to return, or for ShutdownTimeout (one still running then can
// write nothing through the Operator's clients), and returns an error
// matching ErrLeaseLost. The process should exit; a restart campaigns
// again. client-go's leaderelection does the campaigning, with the usual
// timings (15 s lease, 10 s renew deadline, 2 s retry period) and
// ReleaseOnCancel.
//
// A resource that ignores the end of its context would still write after
// the loss, beside the replica that took over. So the Operator's clients
// are behind a write fence: from the moment the Lease is lost, every POST, PUT, PATCH and
// DELETE of a client built from Operator.RESTConfig (Kubernetes, Dynamic,
// Metadata, the Frameworks' clients from NewFramework, the event recorder)
// fails before it is sent, with an error matching ErrLeaseLost, and counts
// in operatorkit_operator_refused_writes_total. Reads go on. The Leases are
// written with clients of their own. A client built from another
// rest.Config is not fenced: build the resources' clients from
// Operator.RESTConfig.
//
// Readiness: /readyz answers 200 when every shared informer's cache has
// synced and, with leader election, when the replica campaigns or leads
// (ready to lead: a standby replica is ready), until Run's shutdown begins:
// from the moment Run's context ends, the Lease is lost (leader election,
// or the member Lease with Sharding) or a Framework fails to boot, its
// check "shutdown" fails and says why ("stopping: the context of Run
// ended"), while Run waits for the reconciliations in flight. /healthz
// answers 200 while the process runs and, with leader election, while a
// leader renews its Lease in time (client-go's leader health adaptor): a
// leader stuck in renewing is unhealthy and gets restarted.
//
// Shared caches: Informer returns one informer per resource, namespace and
// selectors, whoever asks (Frameworks, Owns, Watches, resources reading
// children from a cache). Memory scales with the kinds watched, not with
// the number of Frameworks. A Framework booted on a SharedInformer does not
// run it a second time: Run does, once.
//
// Child watches: Owns enqueues a child's controller owner; References
// enqueues the objects that refer to the object that changed (by an index of
// what each refers to); Watches enqueues what a map function returns
// (Selecting's: the owners whose label selector selects the object, such
// as the objects whose namespace selector selects a Namespace). None
// enqueues on a resync (the owner's
// own informer resyncs it), nor enqueues the written object's controller
// on the echo of the operator's own write
// (announced with OwnWrites.Begin by whatever wrote it), nor on the delete
// event of the operator's own delete (OwnWrites.BeginDelete; not when
// finalizers held the object, whose delete event comes later, when someone
// else removes the last one), so that an operator's create, apply or
// delete of a child does not make the owner reconcile again;
// resource/child announces both. Watches and References still enqueue the
// other objects their map function or index names for such an echo (a
// second owner waiting for a child's name to be free, an object referring
// to another's child), and nothing for an object without a controller
// reference. OwnWrites.Filter gives the filtering of Owns (no echo passes)
// to any informer event handler.
package operator
