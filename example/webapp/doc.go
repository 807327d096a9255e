// Package webapp is the example operator built on operatorkit: it keeps, for
// every WebApp (example.operatorkit.io/v1alpha1), a ConfigMap with the
// content, a Deployment serving it and, from release 2 on, a Service, and
// reports what it did in the WebApp's status.
//
// # What an operator author writes
//
// Each child is its desired state: [DesiredConfigMap], [DesiredDeployment]
// and [DesiredService] build the object from the WebApp alone (after
// [Validate]), and package child (resource/child) does the rest: it reads
// the current children from the operator's shared, label-filtered caches,
// compares only the fields the desired object sets (so defaults and other
// writers' fields never cause updates), writes with server-side apply
// (field manager [ManagedBy], force), sets the label [LabelManagedBy] and
// the controller owner reference, deletes with a UID precondition, and
// describes each change field by field for plans. resourceset.go wraps
// each child resource with the retry and metrics wrappers and builds one
// router.ResourceSet per release; [New] wires them into a
// framework.Framework on an operator.Operator (Operator.NewFramework),
// which runs it with the process's shared informers, leader election and
// endpoints. The binary's command line, preflight and plan subcommand are
// operator.Command's (cmd/webapp-operator).
//
// # Releases
//
// The label [LabelRelease] on a WebApp routes it (router.LabelIs): missing
// or "1" is release 1 (ConfigMap and Deployment), "2" is release 2 (adds
// the Service, and annotates the Deployment's pod template). The pod
// template carries the release label, so moving a WebApp between releases
// rolls its pods. Any other value routes nowhere: the framework reports
// router.ErrNoResourceSet (log, metric, event) and leaves the object alone;
// deleted, it runs the delete chain of the release that last reconciled it
// (in this process: after a restart it waits, Terminating, for a label a
// release handles).
// Moving a WebApp back from release 2 to 1 deletes its Service (release
// 1's service resource desires none) and the annotation.
//
// # Status and events
//
// The status is the Framework's (framework.Config.Conditions): Ready,
// Reconciling and Stalled with observedGeneration, in the kstatus
// conventions, written with server-side apply only when they change. Ready
// means every child matches the spec of the observed generation ("reconciled
// by resource set release-2"); it does not wait for pods to run (the test
// API server has no kubelet; child.Config.ReadyWhen would add that). A
// failing resource sets Ready False, with its name and step as reason
// ("DeploymentApplyUpdateChangeFailed") and its error as message, and
// Reconciling True while it is retried with backoff; a spec the operator
// cannot use ([Validate]: image syntax, DNS-1035 name, replicas, content
// size beyond what the schema checks) gets a permanent error with reason
// [ReasonInvalidSpec] (conditioncontext.WithReason), so Stalled is True and
// it is not retried with backoff, only when the object changes (or at the
// informer's periodic resync). The framework records the
// events: a Warning when Ready turns False or Stalled True, a Normal one
// when Ready turns True again.
//
// # Deletes
//
// The test API server has no garbage collector, so deletes go through the
// chain: the framework's finalizer keeps a deleted WebApp until every
// child resource has deleted its children (found by their controller owner
// reference; a child already gone is no error; an object without
// LabelManagedBy=ManagedBy is never deleted). An object of a child's name
// that exists without that label (a user's ConfigMap "web" beside the
// WebApp "web") is taken over by the first apply, as controller-runtime's
// CreateOrUpdate adopts an object without a controller, and deleted with
// the WebApp then: resource/child does not check for one. The Desired functions are not
// called then, so a WebApp with an invalid spec can be deleted. The owner
// references block the owner's deletion on real clusters (hence the update
// permission on webapps/finalizers).
//
// # Drift
//
// [New] asks the operator.Operator for shared, typed informers of the
// ConfigMaps, Deployments and Services labelled LabelManagedBy=ManagedBy
// (the child resources' caches) and watches them with Operator.Owns: a
// child changed or deleted by someone else enqueues its WebApp and is
// repaired at once, while the echo of the operator's own apply (announced
// to Operator.OwnWrites) enqueues nothing.
//
// # Logs
//
// Logs carry object keys, resource and step names and errors, never objects
// or their content.
package webapp
