package router_test

import (
	"fmt"
	"testing"

	"github.com/operatorkit/operatorkit/router"
)

// BenchmarkRouterResourceSet measures choosing the one set, among 10, that
// handles an object (the 7th; the Handles functions read a label).
func BenchmarkRouterResourceSet(b *testing.B) {
	var sets []*router.ResourceSet
	for i := range 10 {
		sets = append(sets, versionSet(b, fmt.Sprintf("v%d", i), fmt.Sprint(i)))
	}
	r, err := router.New(router.Config{ResourceSets: sets})
	if err != nil {
		b.Fatal(err)
	}
	obj := configMap("6")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.ResourceSet(obj); err != nil {
			b.Fatal(err)
		}
	}
}
