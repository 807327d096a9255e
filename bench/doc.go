// Package bench holds the side-by-side benchmark of operatorkit against
// controller-runtime and against the limit (plain client-go doing only the
// necessary writes), and Go benchmarks of the Framework's event path.
//
//   - cmd/contender is one binary with the operators (--kind): the tuned
//     operatorkit one, operatorkit-readme (written only from what the
//     README and docs/getting-started.md show), controller-runtime, the
//     limit, and limit-ready (the limit that also keeps the Ready condition
//     the Framework writes); started as a child process by the driver, it
//     does not link the API server.
//   - cmd/benchrun is the driver: it starts a real kube-apiserver with
//     testenv in its own process, runs every contender through the phases
//     create, burst, steady and delete, and prints the tables.
//   - The Go benchmarks in this package (go test -bench . -benchmem) measure
//     the path of one event through the Framework's queue to a worker,
//     against a bare client-go work queue.
//
// bench.sh builds both binaries and runs the driver; docs/benchmarks.md has
// the figures and what each one means.
package bench
