package informer

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkGetAfterMutation measures Get once Mutation has been used (the
// mutation cache is on, as with every resource/child Cache that writes):
// a hit, the steady path of a child in place, and a miss, the path of a
// child not there (one to create, a name checked), from several workers
// at once.
func BenchmarkGetAfterMutation(b *testing.B) {
	cached := widget("ns", "a", nil)
	cached.SetResourceVersion("1")
	client := newFakeClient(cached)
	inf, err := New(Config{Client: client, GVR: widgets, ResyncPeriod: -1})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		b.Fatal(err)
	}
	written := cached.DeepCopy()
	written.SetResourceVersion("2")
	inf.Mutation(written)
	for _, key := range []string{"ns/a", "ns/missing"} {
		b.Run(fmt.Sprintf("key=%s", key), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, _, err := inf.Get(key); err != nil {
						b.Error(err)
					}
				}
			})
		})
	}
}
