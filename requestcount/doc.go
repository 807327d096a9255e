// Package requestcount counts the requests a Kubernetes client sends to the
// API server, by verb and by HTTP status code.
//
// A [Counter] wraps a *rest.Config ([Counter.Wrap]); every client built from
// the returned config (typed clientsets, the dynamic client, informers) counts
// each HTTP request it sends. [Counter.Snapshot] reads the totals and
// [Snapshot.Sub] gives the requests made between two snapshots, which is how
// the demo summary and the benchmarks report "requests per reconciliation".
//
// # What is counted
//
// The counting round tripper is the innermost wrapper of the client's
// transport (rest.Config.WrapTransport), so it sees every request that is
// actually sent: a request retried by client-go counts once per attempt,
// while requests held back by the client-side rate limiter count only once
// they are sent. A request counts when its response headers arrive (or the
// transport fails); for a watch that is when the stream opens, not when it
// ends.
//
// # Verbs
//
// The verb is derived from the HTTP method and the URL alone, following the
// API server's own request-info rules in a simplified form that needs no
// k8s.io/apiserver dependency:
//
//   - A resource URL is /api/{version}/... or /apis/{group}/{version}/...,
//     optionally with the legacy /watch/ segment after the version, then
//     "namespaces/{namespace}/" for namespaced resources, then
//     {resource}[/{name}[/{subresource}...]]. /api/v1/namespaces/{name} and
//     its "status" and "finalize" subresources are the Namespace resource
//     itself.
//   - GET is "watch" when the query has watch=true (or 1) or the path has the
//     /watch/ segment; otherwise "get" when the URL names an object and "list"
//     when it names a collection.
//   - POST is "create", PUT is "update", PATCH is "patch"; DELETE is "delete"
//     for a named object and "deletecollection" for a collection.
//   - Any other method on a resource URL is [VerbOther]. Every URL that is not
//     a resource URL (discovery under /api and /apis, /version, /openapi,
//     /healthz, ...) is [VerbNonResource], whatever its method.
//
// Subresources count under the verb of their method: reading pods/log is a
// "get", POSTing pods/eviction a "create", PUTting */status an "update".
//
// # Status codes
//
// Snapshot.ByCode is keyed by the exact HTTP status code (200, 201, 404,
// 409, ...); code 0 counts requests that got no response at all (transport
// errors such as connection refused or a cancelled context). The class of a
// code is code/100; [Snapshot.ClientErrors] sums the 4xx class and
// [Snapshot.ServerErrors] the 5xx class.
//
// # Cost and concurrency
//
// A Counter is safe for concurrent use by any number of clients. Counting
// one request costs one short mutex-protected map increment and no
// allocation once a (verb, code) pair has been seen; URL parsing allocates
// nothing beyond what net/http already parsed.
package requestcount
