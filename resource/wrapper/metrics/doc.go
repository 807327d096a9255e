// Package metrics wraps a resource.Interface with Prometheus metrics.
//
// Metrics, both labelled resource (the resource's Name) and operation:
//
//	operatorkit_resource_operation_duration_seconds  histogram of the duration of each operation
//	operatorkit_resource_operation_errors_total      counter of the operations that returned an error or panicked
//
// The operations are resource.OperationEnsureCreated and
// OperationEnsureDeleted and, when the wrapped resource runs a crud.Resource
// underneath (see crud.OpsWrapper), each CRUD step under its crud.Step* name
// ("get current state", "apply update change", ...). Steps that did not run
// (absent patch parts, cancel signals) are not observed. The error counters
// of all known operations are exported at 0 from the start.
//
// Collectors are registered with Config.Registerer in New; when several
// wrapped resources share a registry, later ones reuse the collectors already
// registered (prometheus.AlreadyRegisteredError), so any number of resources
// can be wrapped. With a nil Registerer (or a nil *prometheus.Registry)
// nothing is registered and the wrapper still works.
//
// Wrappers compose: metrics around retry(crud) times each step including its
// retries; retry around metrics(crud) retries each step and times each
// attempt.
package metrics
