package reconciliationcanceledcontext_test

import (
	"context"
	"fmt"

	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
)

func Example() {
	ctx := reconciliationcanceledcontext.NewContext(context.Background())
	fmt.Println(reconciliationcanceledcontext.IsCanceled(ctx))

	// A resource decides there is nothing more to do in this reconciliation.
	reconciliationcanceledcontext.SetCanceled(ctx)
	fmt.Println(reconciliationcanceledcontext.IsCanceled(ctx))

	// Without the signal, setting does nothing.
	plain := context.Background()
	reconciliationcanceledcontext.SetCanceled(plain)
	fmt.Println(reconciliationcanceledcontext.IsCanceled(plain))
	// Output:
	// false
	// true
	// false
}
