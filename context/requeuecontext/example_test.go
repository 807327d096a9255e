package requeuecontext_test

import (
	"context"
	"fmt"
	"time"

	"github.com/operatorkit/operatorkit/context/requeuecontext"
)

func Example() {
	ctx := requeuecontext.NewContext(context.Background())

	// Two resources ask for another run; the shortest delay wins.
	requeuecontext.SetRequeueAfter(ctx, time.Minute)
	requeuecontext.SetRequeueAfter(ctx, 10*time.Second)

	d, ok := requeuecontext.RequeueAfter(ctx)
	fmt.Println(d, ok)

	// Without the signal, setting does nothing.
	plain := context.Background()
	requeuecontext.SetRequeueAfter(plain, time.Second)
	fmt.Println(requeuecontext.RequeueAfter(plain))
	// Output:
	// 10s true
	// 0s false
}
