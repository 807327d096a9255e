package resourceversioncontext

import (
	"context"
	"fmt"
	"sync"
	"testing"
)

func TestResourceVersion(t *testing.T) {
	if _, ok := ResourceVersion(context.Background()); ok {
		t.Fatal("ResourceVersion on a plain context = true")
	}
	SetResourceVersion(context.Background(), "1") // no signal: ignored, no panic

	ctx := NewContext(context.Background())
	if _, ok := ResourceVersion(ctx); ok {
		t.Fatal("ResourceVersion before any set = true")
	}
	SetResourceVersion(ctx, "")
	if _, ok := ResourceVersion(ctx); ok {
		t.Fatal("an empty resourceVersion was recorded")
	}
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { SetResourceVersion(ctx, fmt.Sprint(i)) })
	}
	wg.Wait()
	SetResourceVersion(ctx, "42")
	if rv, ok := ResourceVersion(ctx); !ok || rv != "42" {
		t.Fatalf("ResourceVersion() = %q, %v; want 42, true", rv, ok)
	}
}
