package statuscontext_test

import (
	"context"
	"fmt"

	"github.com/operatorkit/operatorkit/context/statuscontext"
)

// A resource sets status.nodes and status.endpoint; the Framework writes
// them with the conditions in its one status apply. Here the context is
// made with NewContext, as in a resource's unit test.
func Example() {
	ctx := statuscontext.NewContext(context.Background())

	statuscontext.Set(ctx, "nodes", []string{"cache-0", "cache-1"})
	statuscontext.Set(ctx, "endpoint", "cache.ns.svc:11211")
	statuscontext.Set(ctx, "endpoint", "cache.ns.svc:11212") // the last Set wins

	nodes, _ := statuscontext.Get(ctx, "nodes")
	endpoint, _ := statuscontext.Get(ctx, "endpoint")
	fmt.Println(nodes, endpoint)

	// Without the status fields of a reconciliation, Set does nothing.
	plain := context.Background()
	statuscontext.Set(plain, "nodes", []string{"x"})
	fmt.Println(statuscontext.Get(plain, "nodes"))
	// Output:
	// [cache-0 cache-1] cache.ns.svc:11212
	// <nil> false
}
