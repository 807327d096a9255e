package crdclient

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	clienttesting "k8s.io/client-go/testing"
)

var crdResource = "customresourcedefinitions"

func newCRD(kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object"}},
			}},
		},
	}
}

// accept sets the conditions and accepted names the API server would set.
func accept(crd *apiextensionsv1.CustomResourceDefinition) {
	d := crd.DeepCopy()
	apiextensionsv1.SetObjectDefaults_CustomResourceDefinition(d)
	crd.Status.AcceptedNames = d.Spec.Names
	crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
		{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue, Reason: "NoConflicts"},
		{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue, Reason: "InitialNamesAccepted"},
	}
}

// fastBackOff retries at once, at most n times.
func fastBackOff(n uint64) backoff.BackOff {
	return backoff.WithMaxRetries(&backoff.ZeroBackOff{}, n)
}

// establishOnWrite makes the fake behave like an API server whose
// controllers accept and establish every CRD written.
func establishOnWrite(c *fake.Clientset) {
	for _, verb := range []string{"create", "update"} {
		c.PrependReactor(verb, crdResource, func(a clienttesting.Action) (bool, runtime.Object, error) {
			accept(a.(clienttesting.CreateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition))
			return false, nil, nil
		})
	}
}

// newFake returns a fake clientset holding objs whose discovery lists
// widgets in example.com/v1.
func newFake(objs ...runtime.Object) *fake.Clientset {
	cs := fake.NewClientset(objs...)
	cs.Resources = []*metav1.APIResourceList{{
		GroupVersion: "example.com/v1",
		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true}},
	}}
	return cs
}

// verbs lists the verbs of the requests for CRDs (not discovery) sent so
// far.
func verbs(c *fake.Clientset) string {
	var vs []string
	for _, a := range c.Actions() {
		if a.GetResource().Resource == crdResource {
			vs = append(vs, a.GetVerb())
		}
	}
	return strings.Join(vs, ",")
}

func newClient(t *testing.T, c *fake.Clientset) *CRDClient {
	t.Helper()
	cc, err := New(Config{Client: c})
	if err != nil {
		t.Fatal(err)
	}
	return cc
}

func TestNew(t *testing.T) {
	_, err := New(Config{})
	if !errors.Is(err, ErrInvalidConfig) || !IsInvalidConfig(err) || !strings.Contains(err.Error(), "crdclient.Config.Client") {
		t.Errorf("New(Config{}) = %v, want ErrInvalidConfig naming crdclient.Config.Client", err)
	}
	_, err = New(Config{Client: (*fake.Clientset)(nil)})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "crdclient.Config.Client is a nil *fake.Clientset") {
		t.Errorf("New(Config{Client: a nil *fake.Clientset}) = %v, want ErrInvalidConfig naming crdclient.Config.Client", err)
	}
	_, err = New(Config{Client: newFake(), Logger: (*nilLogger)(nil)})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "crdclient.Config.Logger is a nil *crdclient.nilLogger") {
		t.Errorf("New(Config{Logger: a nil *nilLogger}) = %v, want ErrInvalidConfig naming crdclient.Config.Logger", err)
	}
	_, err = New(Config{Client: newFake(), Dynamic: (*dynamic.DynamicClient)(nil)})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "crdclient.Config.Dynamic is a nil *dynamic.DynamicClient") {
		t.Errorf("New(Config{Dynamic: a nil *dynamic.DynamicClient}) = %v, want ErrInvalidConfig naming crdclient.Config.Dynamic", err)
	}
	_, err = New(Config{Client: newFake(), MigrationPageSize: -1})
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "crdclient.Config.MigrationPageSize must not be negative") {
		t.Errorf("New(Config{MigrationPageSize: -1}) = %v, want ErrInvalidConfig naming crdclient.Config.MigrationPageSize", err)
	}
}

// nilLogger is a logger whose nil pointer panics at its first line.
type nilLogger struct{ lines int }

func (l *nilLogger) Log(...any) error { l.lines++; return nil }

func TestInvalidArguments(t *testing.T) {
	cs := newFake()
	c := newClient(t, cs)
	tests := []struct {
		name string
		crd  *apiextensionsv1.CustomResourceDefinition
		b    backoff.BackOff
		want string
	}{
		{name: "nil", crd: nil, want: "crd must not be nil"},
		{name: "no name", crd: &apiextensionsv1.CustomResourceDefinition{}, want: "crd.Name must not be empty"},
		{name: "nil pointer backoff", crd: newCRD("Widget"), b: (*backoff.ExponentialBackOff)(nil), want: "b is a nil *backoff.ExponentialBackOff"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for op, f := range map[string]func(context.Context, *apiextensionsv1.CustomResourceDefinition, backoff.BackOff) error{
				"EnsureCreated": c.EnsureCreated, "EnsureDeleted": c.EnsureDeleted,
				"MigrateStorage": func(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, b backoff.BackOff) error {
					_, err := c.MigrateStorage(ctx, crd, b)
					return err
				},
			} {
				err := f(context.Background(), tt.crd, tt.b)
				if !errors.Is(err, ErrInvalidArgument) || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("%s() = %v, want ErrInvalidArgument saying %q", op, err, tt.want)
				}
			}
		})
	}
	if len(cs.Actions()) != 0 {
		t.Errorf("requests sent for invalid arguments: %s", verbs(cs))
	}
}

func TestEnsureCreatedCreates(t *testing.T) {
	cs := newFake()
	establishOnWrite(cs)
	crd := newCRD("Widget")
	orig := crd.DeepCopy()
	if err := newClient(t, cs).EnsureCreated(context.Background(), crd, fastBackOff(3)); err != nil {
		t.Fatalf("EnsureCreated() = %v", err)
	}
	if got := verbs(cs); got != "create,get" {
		t.Errorf("requests = %s, want create,get", got)
	}
	if crd.Status.Conditions != nil || crd.Name != orig.Name {
		t.Error("EnsureCreated modified its argument")
	}
}

func TestEnsureCreatedWaitsForEstablished(t *testing.T) {
	cs := newFake()
	gets := 0
	cs.PrependReactor("get", crdResource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		obj, err := cs.Tracker().Get(a.GetResource(), "", a.(clienttesting.GetAction).GetName())
		if err != nil {
			return true, nil, err
		}
		crd := obj.(*apiextensionsv1.CustomResourceDefinition)
		switch gets {
		case 1: // no conditions yet
		case 2:
			accept(crd)
			crd.Status.Conditions[1].Status = apiextensionsv1.ConditionFalse
			crd.Status.Conditions[1].Reason = "Installing"
		default:
			accept(crd)
		}
		return true, crd, nil
	})
	if err := newClient(t, cs).EnsureCreated(context.Background(), newCRD("Widget"), fastBackOff(5)); err != nil {
		t.Fatalf("EnsureCreated() = %v", err)
	}
	if gets != 3 {
		t.Errorf("gets = %d, want 3", gets)
	}
}

func TestEnsureCreatedWaitsForDiscovery(t *testing.T) {
	cs := newFake()
	establishOnWrite(cs)
	lookups := 0
	cs.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		lookups++
		if lookups == 1 {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{}, "example.com/v1")
		}
		return false, nil, nil
	})
	crd := newCRD("Widget")
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v0", Served: false})
	if err := newClient(t, cs).EnsureCreated(context.Background(), crd, fastBackOff(3)); err != nil {
		t.Fatalf("EnsureCreated() = %v", err)
	}
	if lookups != 2 {
		t.Errorf("discovery lookups = %d, want 2 (unserved versions are not looked up)", lookups)
	}

	// A served version that discovery never lists times out.
	crd.Spec.Versions = append(crd.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true})
	err := newClient(t, cs).EnsureCreated(context.Background(), crd, fastBackOff(2))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "example.com/v2 not in discovery") {
		t.Errorf("EnsureCreated() = %v, want ErrTimeout naming example.com/v2", err)
	}
}

func TestEnsureCreatedUpdatesSpec(t *testing.T) {
	existing := newCRD("Widget")
	existing.ResourceVersion = "7"
	existing.Labels = map[string]string{"keep": "me"}
	accept(existing)
	cs := newFake(existing)
	establishOnWrite(cs)
	conflicts := 1
	cs.PrependReactor("update", crdResource, func(clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: crdResource}, existing.Name, errors.New("object was modified"))
		}
		return false, nil, nil
	})

	want := newCRD("Widget")
	want.Spec.Versions[0].AdditionalPrinterColumns = []apiextensionsv1.CustomResourceColumnDefinition{{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"}}
	c := newClient(t, cs)
	if err := c.EnsureCreated(context.Background(), want, fastBackOff(3)); err != nil {
		t.Fatalf("EnsureCreated() = %v", err)
	}
	if got := verbs(cs); got != "create,get,update,get,update,get" {
		t.Errorf("requests = %s, want create,get,update(conflict),get,update,get", got)
	}
	got, err := cs.ApiextensionsV1().CustomResourceDefinitions().Get(context.Background(), want.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Spec.Versions[0].AdditionalPrinterColumns) != 1 || got.Labels["keep"] != "me" {
		t.Errorf("stored CRD = %+v, want the new spec and the old labels", got)
	}

	// Same spec again: no update.
	cs.ClearActions()
	if err := c.EnsureCreated(context.Background(), want, fastBackOff(3)); err != nil {
		t.Fatalf("second EnsureCreated() = %v", err)
	}
	if got := verbs(cs); got != "create,get,get" {
		t.Errorf("requests = %s, want create,get,get", got)
	}
}

func TestEnsureCreatedRejections(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}, "widgets.example.com",
		field.ErrorList{field.Required(field.NewPath("spec", "versions[0]", "schema", "openAPIV3Schema", "type"), "must not be empty at the root")})
	tests := []struct {
		name     string
		existing bool
		reactor  func(clienttesting.Action) (bool, runtime.Object, error)
		verb     string
		want     error
		wantMsg  []string
	}{
		{
			name:    "invalid on create",
			verb:    "create",
			reactor: func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, invalid },
			want:    ErrInvalidCRD,
			wantMsg: []string{"reason Invalid", "spec.versions[0].schema.openAPIV3Schema.type: Required value: must not be empty at the root"},
		},
		{
			name:     "invalid on update",
			existing: true,
			verb:     "update",
			reactor:  func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, invalid },
			want:     ErrInvalidCRD,
			wantMsg:  []string{"update of CRD widgets.example.com", "Required value"},
		},
		{
			name: "names not accepted",
			verb: "create",
			reactor: func(a clienttesting.Action) (bool, runtime.Object, error) {
				crd := a.(clienttesting.CreateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition)
				crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
					{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionFalse, Reason: "KindConflict", Message: `"Widget" is already in use`},
					{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse, Reason: "NotAccepted"},
				}
				return false, nil, nil
			},
			want:    ErrCRDNotAccepted,
			wantMsg: []string{"KindConflict", `"Widget" is already in use`},
		},
		{
			name: "forbidden is returned at once",
			verb: "create",
			reactor: func(clienttesting.Action) (bool, runtime.Object, error) {
				return true, nil, apierrors.NewForbidden(schema.GroupResource{}, "x", errors.New("no"))
			},
			wantMsg: []string{"create CRD widgets.example.com", "forbidden"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cs *fake.Clientset
			if tt.existing {
				old := newCRD("Widget")
				old.Spec.Scope = apiextensionsv1.ClusterScoped
				cs = newFake(old)
			} else {
				cs = newFake()
			}
			cs.PrependReactor(tt.verb, crdResource, tt.reactor)
			err := newClient(t, cs).EnsureCreated(context.Background(), newCRD("Widget"), fastBackOff(100))
			if err == nil {
				t.Fatal("EnsureCreated() = nil")
			}
			if tt.want != nil && !errors.Is(err, tt.want) {
				t.Errorf("EnsureCreated() = %v, want %v", err, tt.want)
			}
			if tt.want == ErrInvalidCRD && !apierrors.IsInvalid(err) {
				t.Errorf("EnsureCreated() = %v, want apierrors.IsInvalid too", err)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("EnsureCreated() = %q, want it to say %q", err, m)
				}
			}
			if n := len(cs.Actions()); n > 4 {
				t.Errorf("%d requests (%s): a rejection must not be retried", n, verbs(cs))
			}
		})
	}
}

func TestEnsureCreatedRetriesTransientErrors(t *testing.T) {
	cs := newFake()
	establishOnWrite(cs)
	failures := 2
	cs.PrependReactor("create", crdResource, func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, apierrors.NewServiceUnavailable("starting")
		}
		return false, nil, nil
	})
	if err := newClient(t, cs).EnsureCreated(context.Background(), newCRD("Widget"), fastBackOff(5)); err != nil {
		t.Fatalf("EnsureCreated() = %v", err)
	}
	if got := verbs(cs); got != "create,create,create,get" {
		t.Errorf("requests = %s", got)
	}
}

func TestEnsureCreatedTimeoutNeverDeletes(t *testing.T) {
	cs := newFake() // nothing ever establishes it
	err := newClient(t, cs).EnsureCreated(context.Background(), newCRD("Widget"), fastBackOff(3))
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "no NamesAccepted condition yet") {
		t.Errorf("EnsureCreated() = %v, want ErrTimeout with the last state", err)
	}
	for _, a := range cs.Actions() {
		if a.GetVerb() == "delete" {
			t.Fatal("EnsureCreated deleted the CRD after a timeout")
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err = newClient(t, cs).EnsureCreated(ctx, newCRD("Widget"), backoff.NewConstantBackOff(10*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrTimeout) {
		t.Errorf("EnsureCreated() with ctx deadline = %v, want DeadlineExceeded", err)
	}
}

func TestEnsureCreatedRecreatesTerminatingCRD(t *testing.T) {
	old := newCRD("Widget")
	now := metav1.Now()
	old.DeletionTimestamp = &now
	old.Finalizers = []string{"customresourcecleanup.apiextensions.k8s.io"}
	cs := newFake(old)
	establishOnWrite(cs)
	gets := 0
	cs.PrependReactor("get", crdResource, func(a clienttesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets == 2 { // the deletion finishes
			_ = cs.Tracker().Delete(a.GetResource(), "", old.Name)
		}
		return false, nil, nil
	})
	if err := newClient(t, cs).EnsureCreated(context.Background(), newCRD("Widget"), fastBackOff(5)); err != nil {
		t.Fatalf("EnsureCreated() = %v", err)
	}
	// create (exists), get (terminating), create (exists), get (gone), create, get (established)
	if got := verbs(cs); got != "create,get,create,get,create,get" {
		t.Errorf("requests = %s, want create,get,create,get,create,get", got)
	}
}

func TestEnsureDeleted(t *testing.T) {
	t.Run("deletes and waits", func(t *testing.T) {
		crd := newCRD("Widget")
		crd.UID = "u1"
		cs := newFake(crd)
		if err := newClient(t, cs).EnsureDeleted(context.Background(), crd, fastBackOff(3)); err != nil {
			t.Fatalf("EnsureDeleted() = %v", err)
		}
		if got := verbs(cs); got != "get,delete,get" {
			t.Errorf("requests = %s, want get,delete,get", got)
		}
		del := cs.Actions()[1].(clienttesting.DeleteAction)
		if p := del.GetDeleteOptions().Preconditions; p == nil || p.UID == nil || *p.UID != "u1" {
			t.Errorf("delete preconditions = %+v, want UID u1", p)
		}
	})
	t.Run("absent is success", func(t *testing.T) {
		cs := newFake()
		if err := newClient(t, cs).EnsureDeleted(context.Background(), newCRD("Widget"), nil); err != nil {
			t.Fatalf("EnsureDeleted() = %v", err)
		}
	})
	t.Run("stuck deletion times out and says why", func(t *testing.T) {
		crd := newCRD("Widget")
		crd.Finalizers = []string{"example.com/stuck"}
		cs := newFake(crd)
		cs.PrependReactor("delete", crdResource, func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, nil // accepted, but the finalizer keeps it
		})
		err := newClient(t, cs).EnsureDeleted(context.Background(), crd, fastBackOff(2))
		if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "example.com/stuck") {
			t.Errorf("EnsureDeleted() = %v, want ErrTimeout naming the finalizer", err)
		}
	})
	t.Run("re-created by someone else counts as gone", func(t *testing.T) {
		crd := newCRD("Widget")
		crd.UID = "u1"
		cs := newFake(crd)
		cs.PrependReactor("delete", crdResource, func(a clienttesting.Action) (bool, runtime.Object, error) {
			replacement := newCRD("Widget")
			replacement.UID = "u2"
			_ = cs.Tracker().Delete(a.GetResource(), "", crd.Name)
			_ = cs.Tracker().Add(replacement)
			return true, nil, nil
		})
		if err := newClient(t, cs).EnsureDeleted(context.Background(), crd, fastBackOff(3)); err != nil {
			t.Fatalf("EnsureDeleted() = %v", err)
		}
		if got := verbs(cs); got != "get,delete,get" {
			t.Errorf("requests = %s, want get,delete,get and no second delete", got)
		}
	})
}

func TestNewDefaultBackOffIsBounded(t *testing.T) {
	b := NewDefaultBackOff().(*backoff.ExponentialBackOff)
	if b.MaxElapsedTime != DefaultMaxElapsedTime || b.InitialInterval != DefaultInitialInterval || b.MaxInterval != DefaultMaxInterval {
		t.Errorf("NewDefaultBackOff() = %+v", b)
	}
}

// TestNamesConflicts: the requested names that are not a CRD's accepted
// ones and that a CRD of its group (itself included) uses, with that CRD;
// other groups do not count.
func TestNamesConflicts(t *testing.T) {
	widgets := newCRD("Widget")
	accept(widgets)
	gadgets := newCRD("Gadget")
	gadgets.Spec.Names.ShortNames = []string{"gd"}
	accept(gadgets)
	elsewhere := newCRD("Thing")
	elsewhere.Spec.Group = "other.example.com"
	elsewhere.Name = "things.other.example.com"
	elsewhere.Spec.Names.ShortNames = []string{"th"}
	accept(elsewhere)
	all := []apiextensionsv1.CustomResourceDefinition{*widgets, *gadgets, *elsewhere}

	if got := namesConflicts(widgets, all); len(got) != 0 {
		t.Errorf("accepted names: conflicts %q, want none", got)
	}
	w := widgets.DeepCopy()
	w.Spec.Names.ShortNames = []string{"gd", "th", "widgets", "wd"}
	w.Spec.Names.ListKind = "GadgetList"
	want := []string{
		`short name "gd" is a short name of CRD gadgets.example.com`,
		`short name "widgets" is the plural of CRD widgets.example.com`,
		`list kind "GadgetList" is the list kind of CRD gadgets.example.com`,
	}
	if got := namesConflicts(w, all); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("conflicts = %q, want %q", got, want)
	}
}
