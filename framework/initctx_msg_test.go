package framework

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/operatorkit/operatorkit/informer/informertest"
	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/router"
)

// TestInitCtxErrorNamesTheSetOnce: the error of a set's InitCtx, which
// the set already wraps with its name, was wrapped again by the
// Framework: "init context of resource set v1: resource set "v1": init
// ctx: no credentials" in the status and events. It names the set once
// now; a panic in InitCtx still names it and matches ErrPanic.
func TestInitCtxErrorNamesTheSetOnce(t *testing.T) {
	r, err := crud.New(crud.Config{Ops: planOps{name: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		initCtx func(context.Context, any) (context.Context, error)
		want    string
		panic   bool
	}{
		{name: "error", initCtx: func(context.Context, any) (context.Context, error) { return nil, errors.New("no credentials") }, want: `resource set "v1": init ctx: no credentials`},
		{name: "panic", initCtx: func(context.Context, any) (context.Context, error) { panic("boom") }, want: `resource set "v1": init ctx: panic: boom`, panic: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			set, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true }, InitCtx: tt.initCtx, Resources: []resource.Interface{r}})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{set}})
			if err != nil {
				t.Fatal(err)
			}
			f, err := New(Config{Name: "plan", Informer: informertest.New(), ResourceRouter: rt, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Plan(context.Background(), object("web", 1, nil), "")
			if err == nil || err.Error() != tt.want || strings.Count(err.Error(), "resource set") != 1 {
				t.Errorf("Plan error = %v, want %q", err, tt.want)
			}
			if errors.Is(err, ErrPanic) != tt.panic {
				t.Errorf("errors.Is(%v, ErrPanic) = %v, want %v", err, !tt.panic, tt.panic)
			}
		})
	}
}

// TestInitCtxPanicOfAnUnnamedSet: a panic in the InitCtx of a set without
// a name is the panic of "resource set (unnamed)" (the resource label of
// errors_total and the PanicError's Resource); it was "resource set ",
// naming nothing.
func TestInitCtxPanicOfAnUnnamedSet(t *testing.T) {
	set, err := router.NewResourceSet(router.ResourceSetConfig{Handles: func(any) bool { return true },
		InitCtx:   func(context.Context, any) (context.Context, error) { panic("boom") },
		Resources: []resource.Interface{&funcResource{name: "r"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = initCtx(context.Background(), set, object("a", 1, nil))
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Resource != "resource set (unnamed)" || !strings.Contains(err.Error(), "resource set (unnamed): init ctx: ") {
		t.Fatalf("initCtx of an unnamed set that panics = %v (PanicError %+v), want the panic of \"resource set (unnamed)\"", err, pe)
	}
}
