package statuscontext

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/operatorkit/operatorkit/internal/statusfields"
)

// TestSetAndGet: the last Set of a field wins, from several goroutines too;
// a value is encoded when set, so a later change of the caller's value
// changes nothing written.
func TestSetAndGet(t *testing.T) {
	ctx := NewContext(context.Background())
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { Set(ctx, fmt.Sprintf("f%d", i%5), i) })
	}
	wg.Wait()
	nodes := []string{"a", "b"}
	Set(ctx, "nodes", nodes)
	nodes[0] = "changed"
	fields := statusfields.From(ctx).List()
	if len(fields) != 6 {
		t.Fatalf("fields = %+v, want 6", fields)
	}
	last := fields[5]
	if last.Name != "nodes" || fmt.Sprint(last.JSON) != "[a b]" || last.Err != nil {
		t.Errorf("nodes = %+v, want the JSON [a b] as set", last)
	}
	Set(ctx, "nodes", nil)
	if v, ok := Get(ctx, "nodes"); !ok || v != nil {
		t.Errorf("Get(nodes) after Set(nil) = %v, %v; want nil, true", v, ok)
	}
	if _, ok := Get(ctx, "other"); ok {
		t.Error("Get of a field never set = true")
	}
}

// TestInvalidFields: names that are not a top-level field of status or
// are the Framework's, and values that do not encode to JSON (a panic in
// MarshalJSON too) are recorded with an error matching ErrInvalidField
// that names the field; Set itself never panics.
func TestInvalidFields(t *testing.T) {
	tests := []struct {
		name  string
		field string
		value any
	}{
		{"empty name", "", 1},
		{"a path", "endpoint.host", "h"},
		{"conditions", "conditions", []string{}},
		{"observedGeneration", "observedGeneration", 3},
		{"a channel", "ch", make(chan int)},
		{"NaN", "ratio", math.NaN()},
		{"MarshalJSON fails", "bad", failing{}},
		{"MarshalJSON panics", "worse", panicking{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := NewContext(context.Background())
			Set(ctx, tt.field, tt.value)
			f := statusfields.From(ctx).List()[0]
			if !errors.Is(f.Err, ErrInvalidField) {
				t.Fatalf("error = %v, want ErrInvalidField", f.Err)
			}
			if tt.field != "" && !contains(f.Err.Error(), "status."+tt.field) {
				t.Errorf("error = %q, want it to name status.%s", f.Err, tt.field)
			}
		})
	}
}

type failing struct{}

func (failing) MarshalJSON() ([]byte, error) { return nil, errors.New("cannot") }

type panicking struct{}

func (panicking) MarshalJSON() ([]byte, error) { panic("boom") }

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestWithoutContext: Set on a context without status fields does nothing,
// and Get finds nothing.
func TestWithoutContext(t *testing.T) {
	Set(context.Background(), "nodes", []string{"a"})
	if v, ok := Get(context.Background(), "nodes"); ok || v != nil {
		t.Errorf("Get = %v, %v; want nil, false", v, ok)
	}
}
