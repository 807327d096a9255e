// Package requeuecontext carries the "requeue after" request of one
// reconciliation in a context.Context.
//
// A resource calls SetRequeueAfter to ask for another reconciliation of the
// object after a delay, also when this one succeeds (for example to poll an
// external system). When several resources ask, the shortest delay wins. The
// Framework reads it with RequeueAfter once the chain has finished; an error
// from the chain takes precedence (the object is retried with backoff, or not
// at all for an error marked retry.Permanent); a failure that must not be
// retried before a delay (a 429's Retry-After) returns retry.After(err, d)
// rather than asking here. After a delete chain it counts
// only when the finalizer stays (finalizerskeptcontext, or a canceled
// reconciliation): a delete chain that finished has nothing to come back for.
//
// Guarantees:
//   - NewContext returns a child context with a new, empty request; it
//     shadows a request the parent may hold.
//   - SetRequeueAfter on a context without the signal does nothing, and
//     RequeueAfter on such a context returns 0, false. framework.ProcessUpdate
//     and ProcessDelete add the signal when their caller did not.
//   - A negative delay counts as 0: requeue as soon as the object's backoff
//     allows (the Framework's: 50 ms the first time, growing while every
//     reconciliation asks again, so that a resource that always asks does
//     not keep a worker busy). The success that asks does not reset the
//     backoff: after failures it goes on from where they left it.
//   - All functions are safe for concurrent use from several goroutines.
package requeuecontext
