// Package webapp is the example operator built on operatorkit: it keeps, for
// every WebApp (example.operatorkit.io/v1alpha1), a ConfigMap with the
// content, a Deployment serving it and, from release 2 on, a Service, and
// reports what it did in the WebApp's status.
//
// # What an operator author writes
//
// Each child is a crud.Ops (configmap.go, deployment.go, service.go): the
// current state read from a cache ([Children]), the desired state computed
// from the WebApp alone ([DesiredConfigMap], [DesiredDeployment],
// [DesiredService]), a patch comparing only the fields the operator owns
// (so defaults and other writers' fields never cause updates), and apply
// steps that write with server-side apply (field manager [ManagedBy], force)
// and delete with a UID precondition. The status is the Framework's (see
// "Status and events"). [NewResourceSets] wraps every resource
// with the retry and metrics wrappers and builds one router.ResourceSet per
// release; [New] wires them into a framework.Framework on an
// operator.Operator, which runs it with the process's shared informers,
// leader election and endpoints.
//
// # Releases
//
// The label [LabelRelease] on a WebApp routes it ([ReleaseOf]): missing or
// "1" is release 1 (ConfigMap and Deployment), "2" is release 2 (adds the
// Service, and labels and annotates the Deployment's pod template, which
// rolls its pods). Any other value routes nowhere: the framework reports
// router.ErrNoResourceSet (log, metric, event) and leaves the object alone.
// Moving a WebApp back from release 2 to 1 deletes its Service.
//
// # Status and events
//
// The status is the Framework's (framework.Config.Conditions): Ready,
// Reconciling and Stalled with observedGeneration, in the kstatus
// conventions, written with server-side apply only when they change. Ready
// means every child matches the spec of the observed generation ("reconciled
// by resource set release-2"); it does not wait for pods to run (the test
// API server has no kubelet), which a production operator would add from
// the Deployment's status. A failing resource sets Ready False, with its
// name and step as reason ("DeploymentApplyUpdateChangeFailed") and its
// error as message, and Reconciling True while it is retried with backoff;
// a spec the operator cannot use ([Validate]: image syntax, DNS-1035 name,
// replicas, content size beyond what the schema checks) gets a permanent
// error with reason [ReasonInvalidSpec] (conditioncontext.WithReason), so
// Stalled is True and it is not retried until the object changes. The
// framework records the events: a Warning when Ready turns False or
// Stalled True, a Normal one when Ready turns True again.
//
// # Deletes
//
// The test API server has no garbage collector, so deletes go through the
// chain: the framework's finalizer keeps a deleted WebApp until every
// resource's EnsureDeleted has deleted its child (a child already gone is
// no error; an object without LabelManagedBy is never deleted). Children
// still carry a controller owner reference for real clusters
// (BlockOwnerDeletion unset: it would need the update permission on
// webapps/finalizers).
//
// # Drift
//
// [New] asks the operator.Operator for shared, typed informers of the
// ConfigMaps, Deployments and Services labelled LabelManagedBy=ManagedBy
// (their caches are the Children) and watches them with Operator.Owns: a
// child changed or deleted by someone else enqueues its WebApp and is
// repaired at once, while the echo of the operator's own apply (announced
// to Operator.OwnWrites) enqueues nothing.
//
// # Logs
//
// Logs carry object keys, resource and step names and errors, never objects
// or their content.
package webapp
