// Package trace records the steps of one reconciliation: which resource ran
// which step, when, for how long and with what outcome.
//
// A caller that wants a trace puts a [Trace] into the reconciliation's context
// with [NewContext]; crud.Resource records every CRUD step and
// framework.ProcessUpdate and ProcessDelete record every resource's ensure
// step (resource.OperationEnsureCreated or OperationEnsureDeleted). Step names
// are the crud.Step* and resource.Operation* constants.
//
// Outcomes: [OutcomeDone] and [OutcomeError] are steps that ran;
// [OutcomeSkipped] is a step that did not run because there was nothing to do
// (an absent patch part); [OutcomeCanceled] is the first step that did not run
// because the resource or the reconciliation was canceled (the steps after it
// are not recorded).
//
// Cost: without a trace in the context, [Record] and [Trace.Record] do nothing
// and allocate nothing, and recorders skip reading the clock by taking their
// start time from [Trace.Now], which returns the zero time for a nil trace.
// With a trace, each step costs one append under a mutex and a clock read;
// steps run one after the other read the clock once each with
// [Trace.RecordNext], which returns where the next one starts.
//
// Bounds: a Trace keeps every step unless [Trace.Limit] bounds it; then it
// keeps its first steps and the last [KeptLast] recorded, and counts the
// steps in between in [Trace.DroppedSteps], so that a chain that records a great
// many steps, or a resource that goes on recording after its
// reconciliation ended, takes bounded memory.
//
// Keeping traces: a store of the last traces of an object (the framework's)
// folds a trace into the one before it when both went the same way
// ([Trace.Fold]): a run of no-op reconciliations takes one place, counted in
// [Trace.Repeats]. Count reconciliations with [Reconciliations], not with the
// number of traces. [NewSized] records into a step buffer from a pool: the
// store gives it back with [Trace.Compact] when it keeps the trace (which
// then holds exactly its steps) and with [Trace.Release] when it folds it,
// so that a run of no-op reconciliations allocates only a small Trace each.
// A store that pushes one object's trace out for each it keeps (a resync of
// more objects than it has room for) compacts the kept one into the steps
// of the one it drops ([Trace.CompactReusing]) and allocates no steps
// either.
package trace
