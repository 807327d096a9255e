package operator_test

import (
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/operator"
)

// TestREADMENamesEveryWatch: the README names every method of Operator that
// makes a Framework reconcile on the events of another informer (Owns for
// children, Watches for objects the operator refers to without owning
// them). It named Owns alone, so that the author of an operator whose
// objects name a Secret learned from it no way to be woken by the Secret.
func TestREADMENamesEveryWatch(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(data)
	fw, inf := reflect.TypeFor[*framework.Framework](), reflect.TypeFor[*operator.SharedInformer]()
	typ := reflect.TypeFor[*operator.Operator]()
	found := 0
	for i := range typ.NumMethod() {
		m := typ.Method(i)
		var takesFramework, takesInformer bool
		for j := 1; j < m.Type.NumIn(); j++ {
			takesFramework = takesFramework || m.Type.In(j) == fw
			takesInformer = takesInformer || m.Type.In(j) == inf
		}
		if !takesFramework || !takesInformer {
			continue
		}
		found++
		if !strings.Contains(readme, "`Operator."+m.Name+"`") {
			t.Errorf("README.md does not name `Operator.%s`", m.Name)
		}
	}
	if found < 2 {
		t.Fatalf("found %d methods of Operator that take a Framework and a SharedInformer, want Owns and Watches", found)
	}
}
