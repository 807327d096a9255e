package router_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operatorkit/operatorkit/resource"
	"github.com/operatorkit/operatorkit/resource/crud"
	"github.com/operatorkit/operatorkit/resource/crud/crudtest"
	"github.com/operatorkit/operatorkit/router"
)

func newCrud(t testing.TB, name string) resource.Interface {
	t.Helper()
	r, err := crud.New(crud.Config{Ops: crudtest.Nop(name)})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// nilLogger is a logger whose nil pointer panics at its first line.
type nilLogger struct{ lines int }

func (l *nilLogger) Log(...any) error { l.lines++; return nil }

// versionSet returns a set named name that handles ConfigMaps labelled
// version=version.
func versionSet(t testing.TB, name, version string) *router.ResourceSet {
	t.Helper()
	s, err := router.NewResourceSet(router.ResourceSetConfig{
		Name: name,
		Handles: func(obj any) bool {
			cm, ok := obj.(*corev1.ConfigMap)
			return ok && cm.Labels["version"] == version
		},
		Resources: []resource.Interface{newCrud(t, "a"), newCrud(t, "b")},
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func configMap(version string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "foo", Labels: map[string]string{"version": version}}}
}

func TestNewResourceSet(t *testing.T) {
	handles := func(any) bool { return true }
	a := newCrud(t, "a")
	tests := []struct {
		name    string
		config  router.ResourceSetConfig
		wantMsg string
	}{
		{name: "missing handles", config: router.ResourceSetConfig{Resources: []resource.Interface{a}}, wantMsg: "router.ResourceSetConfig.Handles must not be empty"},
		{name: "missing resources", config: router.ResourceSetConfig{Handles: handles}, wantMsg: "router.ResourceSetConfig.Resources must not be empty"},
		{name: "nil resource", config: router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{a, nil}}, wantMsg: "router.ResourceSetConfig.Resources[1] must not be nil"},
		{name: "name not UTF-8", config: router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{a, newCrud(t, "b\xff")}}, wantMsg: "router.ResourceSetConfig.Resources[1] has a name that is not valid UTF-8"},
		{name: "duplicate name", config: router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{a, newCrud(t, "b"), newCrud(t, "a")}}, wantMsg: `router.ResourceSetConfig.Resources[0] and Resources[2] have the same name "a"`},
		{name: "nil pointer logger", config: router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{a}, Logger: (*nilLogger)(nil)}, wantMsg: "router.ResourceSetConfig.Logger is a nil *router_test.nilLogger"},
		{name: "empty resource name", config: router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{a, plain("")}}, wantMsg: "router.ResourceSetConfig.Resources[1] (router_test.plain) has an empty name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := router.NewResourceSet(tt.config)
			if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("NewResourceSet() error = %v, want ErrInvalidConfig with %q", err, tt.wantMsg)
			}
		})
	}
}

// plain is a resource.Interface of its own, named by its value.
type plain string

func (p plain) Name() string                           { return string(p) }
func (plain) EnsureCreated(context.Context, any) error { return nil }
func (plain) EnsureDeleted(context.Context, any) error { return nil }

// claimingOps are crud ops that claim objects (as resource/child's do).
type claimingOps struct {
	crud.Ops
	claim string
}

func (o claimingOps) Claim() string { return o.claim }

func claiming(t testing.TB, name, claim string) resource.Interface {
	t.Helper()
	r, err := crud.New(crud.Config{Ops: claimingOps{Ops: crudtest.Nop(name), claim: claim}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// wrapped stands for a wrapper (resource/wrapper/retry, metrics).
type wrapped struct{ resource.Interface }

func (w wrapped) Unwrap() resource.Interface { return w.Interface }

// TestNewResourceSetRejectsTheSameClaimTwice: two resources that each
// delete what they find by the same claim and do not desire would delete
// each other's objects in every reconciliation.
func TestNewResourceSetRejectsTheSameClaimTwice(t *testing.T) {
	handles := func(any) bool { return true }
	const cms = "ConfigMap children labelled app.kubernetes.io/managed-by=op"
	_, err := router.NewResourceSet(router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{
		claiming(t, "web", cms), newCrud(t, "plain"), wrapped{claiming(t, "worker", cms)},
	}})
	want := "Resources[0] (web) and Resources[2] (worker) both keep " + cms
	if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), want) {
		t.Fatalf("NewResourceSet() error = %v, want ErrInvalidConfig with %q", err, want)
	}
	if _, err := router.NewResourceSet(router.ResourceSetConfig{Handles: handles, Resources: []resource.Interface{
		claiming(t, "web", cms), claiming(t, "svc", "Service children labelled app.kubernetes.io/managed-by=op"), claiming(t, "none", ""), claiming(t, "none2", ""),
	}}); err != nil {
		t.Errorf("NewResourceSet() with different claims (and empty ones) = %v, want no error", err)
	}
}

func TestNew(t *testing.T) {
	v1 := versionSet(t, "v1", "1")
	unnamed := versionSet(t, "", "2")
	tests := []struct {
		name    string
		config  router.Config
		wantMsg string
	}{
		{name: "missing sets", config: router.Config{}, wantMsg: "router.Config.ResourceSets must not be empty"},
		{name: "nil set", config: router.Config{ResourceSets: []*router.ResourceSet{v1, nil}}, wantMsg: "router.Config.ResourceSets[1] must not be nil"},
		{name: "duplicate name", config: router.Config{ResourceSets: []*router.ResourceSet{v1, versionSet(t, "v1", "2")}}, wantMsg: `router.Config.ResourceSets[0] and ResourceSets[1] have the same name "v1"`},
		{name: "nil pointer logger", config: router.Config{ResourceSets: []*router.ResourceSet{v1}, Logger: (*nilLogger)(nil)}, wantMsg: "router.Config.Logger is a nil *router_test.nilLogger"},
		{name: "unnamed set twice", config: router.Config{ResourceSets: []*router.ResourceSet{unnamed, v1, unnamed}}, wantMsg: `router.Config.ResourceSets[0] and ResourceSets[2] are the same unnamed set (of resources "a", "b")`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := router.New(tt.config)
			if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Fatalf("New() error = %v, want ErrInvalidConfig with %q", err, tt.wantMsg)
			}
		})
	}
	// Two unnamed sets that are not the same are fine.
	if _, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{unnamed, versionSet(t, "", "3")}}); err != nil {
		t.Fatalf("New() with two different unnamed sets = %v", err)
	}
}

func TestRouterResourceSet(t *testing.T) {
	unnamed, err := router.NewResourceSet(router.ResourceSetConfig{
		Handles:   func(obj any) bool { cm, ok := obj.(*corev1.ConfigMap); return ok && cm.Labels["version"] == "3" },
		Resources: []resource.Interface{newCrud(t, "a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{
		versionSet(t, "v1", "1"),
		versionSet(t, "v2", "2"),
		versionSet(t, "v2-again", "3"),
		unnamed,
		versionSet(t, "v3", "3"),
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		obj      any
		wantSet  string
		wantErr  error
		wantMsgs []string
	}{
		{name: "0 sets", obj: configMap("9"), wantErr: router.ErrNoResourceSet, wantMsgs: []string{"no resource set handles *v1.ConfigMap default/foo"}},
		{name: "0 sets, no metadata", obj: "just a string", wantErr: router.ErrNoResourceSet, wantMsgs: []string{"object of type string"}},
		{name: "1 set", obj: configMap("2"), wantSet: "v2"},
		{name: "3 sets", obj: configMap("3"), wantErr: router.ErrMultipleResourceSets, wantMsgs: []string{"3 resource sets handle *v1.ConfigMap default/foo", `"v2-again", #3, "v3"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set, err := r.ResourceSet(tt.obj)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ResourceSet() error = %v, want %v", err, tt.wantErr)
			}
			for _, msg := range tt.wantMsgs {
				if !strings.Contains(err.Error(), msg) {
					t.Errorf("error %q lacks %q", err, msg)
				}
			}
			if tt.wantErr == nil && set.Name() != tt.wantSet {
				t.Fatalf("ResourceSet() = %q, want %q", set.Name(), tt.wantSet)
			}
			if router.IsNoResourceSet(err) != errors.Is(tt.wantErr, router.ErrNoResourceSet) {
				t.Fatalf("IsNoResourceSet(%v) is wrong", err)
			}
		})
	}
	if n := len(r.ResourceSets()); n != 5 {
		t.Fatalf("ResourceSets() has %d sets, want 5", n)
	}
}

type ctxKey struct{}

func TestResourceSetInitCtx(t *testing.T) {
	errInit := errors.New("no credentials")
	tests := []struct {
		name    string
		initCtx func(context.Context, any) (context.Context, error)
		wantVal any
		wantErr error
	}{
		{name: "nil is the identity"},
		{name: "adds a value", initCtx: func(ctx context.Context, obj any) (context.Context, error) {
			return context.WithValue(ctx, ctxKey{}, obj), nil
		}, wantVal: "obj"},
		{name: "error names the set", initCtx: func(ctx context.Context, obj any) (context.Context, error) {
			return nil, errInit
		}, wantErr: errInit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := router.NewResourceSet(router.ResourceSetConfig{
				Name:      "v1",
				Handles:   func(any) bool { return true },
				InitCtx:   tt.initCtx,
				Resources: []resource.Interface{newCrud(t, "a")},
			})
			if err != nil {
				t.Fatal(err)
			}
			base := context.Background()
			ctx, err := s.InitCtx(base, "obj")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("InitCtx() error = %v, want %v", err, tt.wantErr)
			}
			if err != nil {
				if !strings.Contains(err.Error(), `resource set "v1": init ctx: no credentials`) {
					t.Fatalf("InitCtx() error = %q does not name the set", err)
				}
				return
			}
			if tt.initCtx == nil && ctx != base {
				t.Fatal("InitCtx() without a function changed the context")
			}
			if got := ctx.Value(ctxKey{}); got != tt.wantVal {
				t.Fatalf("value = %v, want %v", got, tt.wantVal)
			}
			if len(s.Resources()) != 1 || s.Resources()[0].Name() != "a" {
				t.Fatalf("Resources() = %v", s.Resources())
			}
		})
	}
}

// TestSingle: one set, named as given, that handles every object (typed,
// unstructured, not an object at all) with the resources in order; the
// resources' errors are NewResourceSet's.
func TestSingle(t *testing.T) {
	a, b := newCrud(t, "a"), newCrud(t, "b")
	r, err := router.Single("v1", a, b)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(r.ResourceSets()); n != 1 {
		t.Fatalf("%d resource sets, want 1", n)
	}
	for _, obj := range []any{configMap("1"), configMap(""), &corev1.Secret{}, "not an object"} {
		set, err := r.ResourceSet(obj)
		if err != nil {
			t.Fatalf("ResourceSet(%T): %v", obj, err)
		}
		if set.Name() != "v1" || len(set.Resources()) != 2 || set.Resources()[0] != a || set.Resources()[1] != b {
			t.Errorf("ResourceSet(%T) = %s with %v, want v1 with a, b", obj, set.Name(), set.Resources())
		}
	}
	if r, err := router.Single("", a); err != nil || r.ResourceSets()[0].Name() != "" {
		t.Errorf("Single with no name: %v", err)
	}

	for _, tc := range []struct {
		name      string
		resources []resource.Interface
		want      string
	}{
		{"no resources", nil, "Resources must not be empty"},
		{"nil resource", []resource.Interface{a, nil}, "Resources[1] must not be nil"},
		{"same name twice", []resource.Interface{a, newCrud(t, "a")}, `"a"`},
	} {
		_, err := router.Single("v1", tc.resources...)
		if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidConfig saying %s", tc.name, err, tc.want)
		}
	}
}

// TestTypedNilObject: a nil pointer of a type with metadata (meta.Accessor
// takes it) is handled by no set, as LabelIs documents for objects without
// metadata; LabelIs and the router's error for it dereferenced nil.
func TestTypedNilObject(t *testing.T) {
	v1, err := router.NewResourceSet(router.ResourceSetConfig{
		Name: "v1", Handles: router.LabelIs("version", "1", true),
		Resources: []resource.Interface{newCrud(t, "a")},
	})
	if err != nil {
		t.Fatal(err)
	}
	r, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{v1}})
	if err != nil {
		t.Fatal(err)
	}
	for name, obj := range map[string]any{
		"ConfigMap":    (*corev1.ConfigMap)(nil),
		"Unstructured": (*unstructured.Unstructured)(nil),
	} {
		t.Run(name, func(t *testing.T) {
			if router.LabelIs("version", "1", true)(obj) {
				t.Error("LabelIs handles a nil object")
			}
			if _, err := r.ResourceSet(obj); !router.IsNoResourceSet(err) {
				t.Errorf("ResourceSet(%T nil) error = %v, want no resource set", obj, err)
			}
		})
	}
}

// TestTypedNilResource: a nil *crud.Resource in a set's Resources is
// refused with an error naming the entry, not a panic on its Name.
func TestTypedNilResource(t *testing.T) {
	var never *crud.Resource
	_, err := router.NewResourceSet(router.ResourceSetConfig{Handles: func(any) bool { return true }, Resources: []resource.Interface{newCrud(t, "a"), never}})
	if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), "Resources[1] must not be nil") {
		t.Fatalf("NewResourceSet() error = %v, want ErrInvalidConfig naming Resources[1]", err)
	}
}

// TestResourceSetInitCtxNilContext: an InitCtx that returns a nil context
// and no error is an error naming the set, not a nil context passed on to
// the resources.
func TestResourceSetInitCtxNilContext(t *testing.T) {
	s, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v1", Handles: func(any) bool { return true },
		InitCtx:   func(context.Context, any) (context.Context, error) { return nil, nil },
		Resources: []resource.Interface{newCrud(t, "a")}})
	if err != nil {
		t.Fatal(err)
	}
	if ctx, err := s.InitCtx(context.Background(), "obj"); err == nil || ctx != nil || !strings.Contains(err.Error(), "nil context") {
		t.Errorf("InitCtx() = %v, %v; want an error about the nil context", ctx, err)
	}
}

// TestNewResourceSetRejectsInvalidUTF8Name: a set's name is the
// resource_set label of the Framework's objects gauge, whose scrape
// panicked (MustNewConstMetric), taking the operator down, once an object
// was routed to a set whose name was not valid UTF-8. NewResourceSet
// refuses such a name, as it refuses such a resource name.
func TestNewResourceSetRejectsInvalidUTF8Name(t *testing.T) {
	_, err := router.NewResourceSet(router.ResourceSetConfig{
		Name:      "v\xff",
		Handles:   func(any) bool { return true },
		Resources: []resource.Interface{newCrud(t, "a")},
	})
	if !errors.Is(err, router.ErrInvalidConfig) || !strings.Contains(err.Error(), "Name") {
		t.Fatalf("NewResourceSet(Name: invalid UTF-8) error = %v, want ErrInvalidConfig naming Name", err)
	}
	if _, err := router.Single("v\xff", newCrud(t, "a")); !errors.Is(err, router.ErrInvalidConfig) {
		t.Fatalf("Single(invalid UTF-8 name) error = %v, want ErrInvalidConfig", err)
	}
}

// TestRouterResourceSetRecoversAPanicInHandles: a panic in a set's Handles
// is returned as a *PanicError naming the set (its name, or its position
// when it has none) with the panic's value and stack; the sets after it
// are not asked.
func TestRouterResourceSetRecoversAPanicInHandles(t *testing.T) {
	boom := errors.New("nil label map")
	for _, tt := range []struct{ name, setName, want string }{
		{name: "named", setName: "v2", want: `resource set "v2": handles: panic: nil label map`},
		{name: "unnamed", want: `resource set #1: handles: panic: nil label map`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			panics, err := router.NewResourceSet(router.ResourceSetConfig{Name: tt.setName, Handles: func(any) bool { panic(boom) }, Resources: []resource.Interface{newCrud(t, "a")}})
			if err != nil {
				t.Fatal(err)
			}
			asked := false
			after, err := router.NewResourceSet(router.ResourceSetConfig{Name: "v3", Handles: func(any) bool { asked = true; return true }, Resources: []resource.Interface{newCrud(t, "a")}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := router.New(router.Config{ResourceSets: []*router.ResourceSet{versionSet(t, "v1", "1"), panics, after}})
			if err != nil {
				t.Fatal(err)
			}
			set, err := r.ResourceSet(configMap("2"))
			var pe *router.PanicError
			if set != nil || !errors.As(err, &pe) || err.Error() != tt.want || pe.ResourceSet != panics || pe.Index != 1 || !errors.Is(err, boom) || !strings.Contains(string(pe.Stack), "TestRouterResourceSetRecoversAPanicInHandles") {
				t.Fatalf("ResourceSet() = %v, %v (%+v); want the *PanicError %q of set 1 with the stack", set, err, pe, tt.want)
			}
			if asked {
				t.Error("the set after the one that panicked was asked")
			}
		})
	}
}
