package webapp

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/router"
)

// testRouter builds the operator's real router. The API server is never
// called: routing makes no request.
func testRouter(t testing.TB) *router.Router {
	t.Helper()
	r, err := router.New(router.Config{ResourceSets: newTestOperator(t).ResourceSets()})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRouterPicksTheReleaseSet(t *testing.T) {
	r := testRouter(t)
	tests := []struct {
		labels  map[string]string
		wantSet string
		wantErr error
	}{
		{labels: nil, wantSet: "release-1"},
		{labels: map[string]string{LabelRelease: "1"}, wantSet: "release-1"},
		{labels: map[string]string{LabelRelease: "2"}, wantSet: "release-2"},
		{labels: map[string]string{"app": "x"}, wantSet: "release-1"},
		{labels: map[string]string{LabelRelease: "3"}, wantErr: router.ErrNoResourceSet},
		{labels: map[string]string{LabelRelease: ""}, wantErr: router.ErrNoResourceSet},
		{labels: map[string]string{LabelRelease: " 2"}, wantErr: router.ErrNoResourceSet},
		{labels: map[string]string{LabelRelease: "02"}, wantErr: router.ErrNoResourceSet},
		{labels: map[string]string{LabelRelease: "v2"}, wantErr: router.ErrNoResourceSet},
	}
	for _, tt := range tests {
		for _, obj := range []any{
			&v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "ns", Labels: tt.labels}},
			unstructuredWith(tt.labels),
		} {
			set, err := r.ResourceSet(obj)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("ResourceSet(%T %v) error = %v, want %v", obj, tt.labels, err, tt.wantErr)
			}
			if err == nil && set.Name() != tt.wantSet {
				t.Fatalf("ResourceSet(%T %v) = %s, want %s", obj, tt.labels, set.Name(), tt.wantSet)
			}
		}
	}
}

func TestResourceSetsChains(t *testing.T) {
	r := testRouter(t)
	want := map[string][]string{
		"release-1": {ConfigMapName, DeploymentName, ServiceName},
		"release-2": {ConfigMapName, DeploymentName, ServiceName},
	}
	for _, s := range r.ResourceSets() {
		var got []string
		for _, res := range s.Resources() {
			got = append(got, res.Name())
		}
		if len(got) != len(want[s.Name()]) {
			t.Fatalf("set %s resources = %v, want %v", s.Name(), got, want[s.Name()])
		}
		for i := range got {
			if got[i] != want[s.Name()][i] {
				t.Fatalf("set %s resources = %v, want %v", s.Name(), got, want[s.Name()])
			}
		}
	}
}

func TestNewInvalidConfig(t *testing.T) {
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("New(empty) error = %v, want ErrInvalidConfig", err)
	}
}

func unstructuredWith(labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	u.SetKind(v1alpha1.Kind)
	u.SetName("w")
	u.SetNamespace("ns")
	u.SetLabels(labels)
	return u
}

// FuzzRouting checks, for any value of the release label (present or not),
// that exactly the documented objects route to a set: at most one set
// handles an object, exactly one when the label is missing, "1" or "2",
// and it is the set of that release.
func FuzzRouting(f *testing.F) {
	for _, seed := range []struct {
		value   string
		present bool
	}{{"", false}, {"", true}, {"1", true}, {"2", true}, {"3", true}, {" 2", true}, {"2\x00", true}, {"١", true}} {
		f.Add(seed.value, seed.present)
	}
	r := testRouter(f)
	f.Fuzz(func(t *testing.T, value string, present bool) {
		labels := map[string]string{"other": value}
		if present {
			labels[LabelRelease] = value
		}
		release, ok := Release1, !present || value == Release1 || value == Release2
		if present {
			release = value
		}
		handling := 0
		for _, s := range r.ResourceSets() {
			if s.Handles(unstructuredWith(labels)) {
				handling++
				if !ok || s.Name() != "release-"+release {
					t.Fatalf("set %s handles label %q (present %v); want release %q, %v", s.Name(), value, present, release, ok)
				}
			}
		}
		if want := map[bool]int{true: 1, false: 0}[ok]; handling != want {
			t.Fatalf("%d sets handle label %q (present %v), want %d", handling, value, present, want)
		}
		set, err := r.ResourceSet(&v1alpha1.WebApp{ObjectMeta: metav1.ObjectMeta{Name: "w", Labels: labels}})
		if ok && (err != nil || set.Name() != "release-"+release) {
			t.Fatalf("router: label %q: set %v, err %v; want release %s", value, set, err, release)
		}
		if !ok && !errors.Is(err, router.ErrNoResourceSet) {
			t.Fatalf("router: label %q: err %v, want ErrNoResourceSet", value, err)
		}
		for _, s := range r.ResourceSets() {
			if s.Handles(nil) {
				t.Fatalf("set %s handles a nil object", s.Name())
			}
		}
	})
}
