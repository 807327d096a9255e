package framework

import (
	"strings"
	"testing"
)

type described struct{}

func (described) Describe() []string { return []string{"replicas: 2 -> 3"} }

type stringer struct{}

func (stringer) String() string { return "image: a -> b" }

func TestFormatPlans(t *testing.T) {
	var b strings.Builder
	FormatPlans(&b, []ResourcePlan{
		{Resource: "deployment", Update: described{}},
		{Resource: "configmap", Create: map[string]string{"k": "v"}},
		{Resource: "service", Delete: stringer{}},
		{Resource: "status"},
		{Resource: "custom", Unsupported: true},
	})
	want := `resource deployment
  ~ update
      replicas: 2 -> 3
resource configmap
  + create
      {
        "k": "v"
      }
resource service
  - delete
      image: a -> b
resource status
  = no changes
resource custom
  ? not a crud resource: cannot plan
`
	if got := b.String(); got != want {
		t.Fatalf("FormatPlans() =\n%s\nwant\n%s", got, want)
	}
}
