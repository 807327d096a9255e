// Package statuscontext carries, within one reconciliation, the fields of
// the reconciled object's status that resources compute, other than its
// conditions: the names of a Deployment's pods in status.nodes, a
// status.endpoint, an external system's status.recordID.
//
// A resource calls [Set] with the field's name and value; the Framework
// (framework.Config.Conditions) writes every field set, together with the
// conditions and status.observedGeneration, in its one server-side apply
// of the status at the end of the reconciliation, under its field manager,
// and only when something differs from the object as cached: a steady
// resync writes nothing. The resource needs no client, no field manager,
// no comparison and no resourceVersion bookkeeping of its own, and its
// field costs no write of its own.
//
// Guarantees and choices:
//   - Top-level fields only: field is a name in status ("nodes"), never a
//     path; the value is the whole field (a list, a map, a struct, a
//     scalar), encoded with encoding/json when Set is called.
//   - Kept until set again: a field the Framework wrote stays as it is in
//     the reconciliations that do not set it (a chain that fails before the
//     resource that sets it, a resource set that does not have that
//     resource): the Framework's apply carries it over, read from the
//     object, as it carries over the conditions it wrote before
//     (managedFields tell which are its), on the version it read only: a
//     value another writer changed since, and so took from the Framework,
//     is not written back from a stale cache (the apply fails with a
//     conflict, and the Framework reads the latest object and applies
//     again). Set the field to nil to remove it.
//   - Written whatever the outcome: a field set before the chain failed (or
//     stopped) is written with the failure's conditions, as a condition is;
//     nothing is written after framework.Framework.Abort, nor once the
//     Framework's finalizer is removed from an object being deleted.
//   - Compared before writing: a field counts as changed when its value, as
//     JSON, differs from the object's. A typed object's Go field of that
//     JSON name (the status's own, or one of a struct embedded in it, as
//     encoding/json finds it) is read alone, encoded as the object encodes
//     it (with a MarshalJSON of pointer receiver too, set such a value by
//     its pointer; in a JSON string for a tag's ",string", set such a
//     value as that string), so a zero value that the Go type omits is still
//     compared, and an empty list or map compares equal to an
//     absent field (a Go slice cannot tell them apart): setting one on an
//     object without the field writes nothing. With a typed cache the Go
//     type must have the field: the cache holds nothing else to compare
//     with, and the Framework would write it in each reconciliation.
//   - Validated by the Framework: a field named "" or with a dot, the
//     Framework's own "conditions" and "observedGeneration", and a value
//     that does not encode to JSON (a channel, a NaN, a MarshalJSON that
//     fails or panics) are left out of the write and fail the
//     reconciliation with a permanent error matching [ErrInvalidField] that
//     names the object and the field (Ready False and Stalled True with
//     reason "InvalidStatusField"); the valid fields are written. So is a
//     field, or a value, that the CRD's status schema refuses (a field it
//     does not declare, a number below its minimum): the API server then
//     refuses the whole apply, and the Framework applies again without it
//     (one refused apply in each reconciliation that sets it).
//   - The last Set of a field wins. All functions are safe for concurrent
//     use from several goroutines.
//   - Without a Framework with Config.Conditions (framework.ProcessUpdate
//     alone, a Framework without Conditions) Set does nothing and Get
//     finds nothing, unless the caller made the context with [NewContext].
//
// The field belongs to the Framework's field manager: a status field that
// another writer (a hand-written apply under another field manager) owns
// must not be set here too, or the two writers take it from each other.
package statuscontext
