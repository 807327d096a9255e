// Package crdclient makes sure a CustomResourceDefinition (apiextensions.k8s.io/v1)
// is served by the API server, or is gone, before an operator starts
// watching its custom resources.
//
// [CRDClient.EnsureCreated] creates the CRD or brings the spec of an
// existing one to the given spec, then waits until the API server has
// accepted its names and established it. [CRDClient.EnsureDeleted] deletes
// it (and so every custom resource of it) and waits until it is gone.
// [CRDClient.MigrateStorage] rewrites the stored objects of a CRD whose
// storage version changed, and then sets its status.storedVersions to the
// storage version alone, so that a later spec may drop the old versions.
//
// # Guarantees
//
//   - Idempotent: every call may be repeated, from any starting state.
//   - Says why: a CRD the API server refuses fails at once, never retried,
//     with an error that wraps [ErrInvalidCRD] (a schema or field error; the
//     server's StatusError with every field error is wrapped too) or
//     [ErrCRDNotAccepted] (a names conflict; the NamesAccepted condition's
//     reason and message are in the error, and the CRD of the group that
//     holds each requested name, when the caller may list CRDs).
//   - Bounded: waiting and retrying follow the backoff.BackOff given, and
//     stop when the context ends. A nil backoff means [NewDefaultBackOff]:
//     exponential from 50ms to at most 2s between attempts, giving up after
//     one minute (for MigrateStorage, one minute per step: it resets the
//     backoff before reading the CRD, the wait for discovery, each page,
//     each object's write and the status update). Only transient failures
//     are retried (timeouts, 429, 5xx, refused or reset connections,
//     conflicts of the spec's update and of status.storedVersions'
//     update); other API errors are returned at once.
//   - Never destructive by accident: EnsureCreated never deletes anything,
//     also not when its wait times out; EnsureDeleted deletes with a UID
//     precondition, so it never deletes a CRD that someone else re-created
//     in the meantime.
//   - Only the spec is managed: an existing CRD keeps its labels,
//     annotations and status; its spec is replaced (not merged) by the one
//     given, with an update carrying the resourceVersion just read and
//     retried on conflict (a few times at once, then at the backoff's pace,
//     with the CRD read again). A CRD being deleted is waited for and then
//     created anew.
//   - Storage migration only when asked for: MigrateStorage writes every
//     object of the CRD (one update each, unchanged but for managedFields
//     entries of other versions, which then name the storage version, with
//     its resourceVersion; an object written or deleted meanwhile is
//     skipped, unless one written meanwhile still has such an entry),
//     so nothing in operatorkit calls it unless the author asks
//     (framework.Config.MigrateStorage, never in a dry run). It writes
//     nothing when status.storedVersions is already the storage version
//     alone, holds one page of objects (Config.MigrationPageSize) in
//     memory at a time, and leaves status.storedVersions as it was unless
//     every object listed was written or skipped and the CRD's storage
//     version did not change meanwhile (ErrStorageVersionChanged).
//
// Establishment is read from the conditions NamesAccepted and Established.
// A CRD whose requested names are its accepted names (status.acceptedNames)
// is served under them whatever NamesAccepted says: the API server does not
// look at the names of such a CRD again, so a False left by an earlier spec
// (a short name another CRD held, since taken out) stays. After an update
// of the names, a False that no CRD of the group explains any more (read as
// the API server's naming controller reads them) is taken for one from
// before the update, and waited on.
// On API servers that report the conditions' observedGeneration (the
// CRDObservedGenerationTracking feature, on by default since Kubernetes
// 1.36), EnsureCreated also waits until they describe the current
// generation. The conditions alone do not say that a version added by an
// update is served yet (Established stays True throughout), so EnsureCreated
// also waits until API discovery lists the resource under every served
// version, as controller-runtime's envtest does. Other changes to an
// existing version (schema, printer columns) take effect as the API
// server's own CRD informer catches up, normally within milliseconds.
package crdclient
