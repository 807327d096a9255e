// Package reconciliationcanceledcontext carries the "reconciliation canceled"
// signal of one reconciliation in a context.Context.
//
// A resource calls SetCanceled to stop the whole chain as a success:
// framework.ProcessUpdate and ProcessDelete run no further resource and return
// nil (so the object is not retried with backoff), and a crud.Resource runs none
// of its remaining steps. Use it when there is nothing more to do this time, for
// example while waiting for another controller; pair it with requeuecontext to
// come back later. In a delete chain, canceling keeps the Framework's
// finalizer on the object (the resources after the canceling one have not
// deleted anything yet): the chain runs again, after the delay asked for with
// requeuecontext, else with the object's backoff.
//
// Guarantees:
//   - NewContext returns a child context with a new, unset signal; it shadows
//     a signal the parent may hold.
//   - SetCanceled on a context without the signal does nothing, and IsCanceled
//     on such a context returns false. framework.ProcessUpdate and
//     ProcessDelete add the signal when their caller did not.
//   - The signal is one-way: once set it stays set for the rest of the
//     reconciliation.
//   - All functions are safe for concurrent use from several goroutines.
package reconciliationcanceledcontext
