// Package router picks the resource set that reconciles an object.
//
// A [ResourceSet] is an ordered list of resources plus a Handles predicate
// and an optional InitCtx; an operator usually has one set per version of its
// custom object (for example "v1" and "v2", chosen by a version label). A
// [Router] holds the sets and, for every object, returns the one set whose
// Handles returns true. [Single] builds the router of an operator with one
// set, which handles every object.
//
// Guarantees:
//   - [Router.ResourceSet] returns exactly one set or an error: one matching
//     [ErrNoResourceSet] when no set handles the object (normal when several
//     operators share a kind), one matching [ErrMultipleResourceSets] when
//     several do (a bug in the Handles functions), a [*PanicError] naming
//     the set when a Handles function panicked. Errors name the object,
//     or the set that panicked.
//   - Every Handles function is called once per lookup, in the order of
//     Config.ResourceSets; a Router is safe for concurrent use when the
//     Handles functions are.
//   - Resource names are unique (and valid UTF-8) within a set, and set
//     names are valid UTF-8 and (when given) unique within a router, so
//     that logs, traces and metrics identify them; [New] refuses an
//     unnamed set given twice too, which would handle its objects twice.
//
// # Objects that move between sets
//
// An object moves to another set when its labels change (an upgrade from
// release "1" to "2", a downgrade back, a label no set handles) or when the
// operator is rolled to a binary with other sets. What the Framework
// (package framework) and the child resources (package resource/child) do
// then, and what they leave to the sets' author:
//   - Routing is per reconciliation: the object's next reconciliation runs
//     the new set. A chain of the old set already running finishes (a label
//     change makes no new generation, so it does not supersede it); the
//     new set runs right after.
//   - The new set's resources find what the old set's resources of the
//     same claim ([resource.Claimer]) made, and take it over: child
//     resources of one kind and ManagedBy over one informer share what they
//     know of an owner's children, the children the old set wrote an
//     instant before included, and apply only what differs. Keep
//     FieldManager and ManagedBy of a child resource the same in every
//     release: fields that another field manager applied stay, and children
//     under another ManagedBy are another claim. Resources of one claim in
//     two sets do not fight (one set reconciles an object at a time); only
//     within a set are they refused.
//   - Nothing runs the old set's resources after the move. Whatever only
//     they keep (a Service that release 1 has no resource for, a record in
//     an external system) is neither updated nor deleted by the new set,
//     not on the move and not by its delete chain: a child with a
//     controller reference to the object goes with it through the garbage
//     collector (not where none runs, as in testenv's API server), anything
//     else is leaked. To delete it on the move, give every set a resource of
//     that claim, which in the sets without the child desires none
//     (example/webapp's release 1 has a Service resource whose Desired
//     returns nil).
//   - A deleted object runs the delete chain of the set that handles it
//     when it is deleted; one that no set handles runs the delete chain of
//     the set that last reconciled it in this process, and after a restart
//     waits, Terminating, for a set that handles it (framework's doc.go).
//   - Status (framework.Config.Conditions): Ready's message names the new
//     set from its first success; conditions that only the old set's
//     resources set stay as they last wrote them, with the generation
//     they observed, until a resource sets them again.
//   - The gauge operatorkit_framework_objects{resource_set} counts an
//     object under the set that last reconciled it: under the new set from
//     its first reconciliation, and under the old one while no set handles
//     it.
package router
