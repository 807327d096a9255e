package scope

import (
	"context"
	"errors"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestOf: a discovery's answer tells a resource served and namespaced or
// cluster-scoped, not served (its group version NotFound, or a list
// without it: a subresource of its name does not count), or nothing (an
// error other than NotFound).
func TestOf(t *testing.T) {
	list := &metav1.APIResourceList{APIResources: []metav1.APIResource{
		{Name: "widgets", Namespaced: true},
		{Name: "widgets/status", Namespaced: true},
		{Name: "gadgets"},
		{Name: "nodes/status"},
	}}
	for _, tt := range []struct {
		name     string
		list     *metav1.APIResourceList
		err      error
		resource string
		want     Scope
	}{
		{"namespaced", list, nil, "widgets", Namespaced},
		{"cluster-scoped", list, nil, "gadgets", ClusterScoped},
		{"not in the list", list, nil, "things", NotServed},
		{"only a subresource of its name", list, nil, "nodes", NotServed},
		{"group version not served", nil, apierrors.NewNotFound(schema.GroupResource{}, ""), "widgets", NotServed},
		{"discovery failed", nil, errors.New("connection refused"), "widgets", Unknown},
		{"no list", nil, nil, "widgets", Unknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Of(tt.list, tt.err, tt.resource); got != tt.want {
				t.Errorf("Of() = %v, want %v", got, tt.want)
			}
		})
	}
}

type oneList struct {
	list *metav1.APIResourceList
	gv   string
}

func (d *oneList) ServerResourcesForGroupVersionWithContext(_ context.Context, gv string) (*metav1.APIResourceList, error) {
	d.gv = gv
	return d.list, nil
}

// TestDiscover: Discover asks for gvr's group version.
func TestDiscover(t *testing.T) {
	d := &oneList{list: &metav1.APIResourceList{APIResources: []metav1.APIResource{{Name: "clusterroles"}}}}
	gvr := schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	if got := Discover(context.Background(), d, gvr); got != ClusterScoped || d.gv != "rbac.authorization.k8s.io/v1" {
		t.Errorf("Discover() = %v after asking for %q, want ClusterScoped after asking for rbac.authorization.k8s.io/v1", got, d.gv)
	}
}
