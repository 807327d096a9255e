package conditioncontext_test

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
)

// A resource creates a database outside Kubernetes once: it runs the Guard
// only while DatabaseReady is not True, and the Guard records the outcome.
// Under a Framework with Config.Conditions the Guard first locks the
// condition on the object; here, with NewContext, it has no lock.
func Example() {
	ctx := conditioncontext.NewContext(context.Background())
	creates := 0
	ensureDatabase := func(ctx context.Context) error {
		if c, ok := conditioncontext.Get(ctx, "DatabaseReady"); ok && c.Status == metav1.ConditionTrue {
			return nil // created already
		}
		return conditioncontext.Guard(ctx, "DatabaseReady", "Creating", func(ctx context.Context) (metav1.ConditionStatus, string, string, error) {
			creates++
			return metav1.ConditionTrue, "Created", "database db-1", nil
		})
	}
	for range 2 {
		if err := ensureDatabase(ctx); err != nil {
			fmt.Println(err)
		}
	}
	c, _ := conditioncontext.Get(ctx, "DatabaseReady")
	fmt.Println(creates, c.Status, c.Reason, c.Message)
	// Output:
	// 1 True Created database db-1
}
