package requestcount

import (
	"net/http"
	"testing"
)

func TestVerbOf(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		query  string
		prefix string
		want   string
	}{
		{name: "get core named", method: http.MethodGet, path: "/api/v1/namespaces/ns/pods/p1", want: VerbGet},
		{name: "list core namespaced", method: http.MethodGet, path: "/api/v1/namespaces/ns/pods", want: VerbList},
		{name: "list core all namespaces", method: http.MethodGet, path: "/api/v1/pods", want: VerbList},
		{name: "list with trailing slash", method: http.MethodGet, path: "/api/v1/namespaces/ns/pods/", want: VerbList},
		{name: "watch query", method: http.MethodGet, path: "/api/v1/namespaces/ns/pods", query: "labelSelector=a%3Db&watch=true&resourceVersion=1", want: VerbWatch},
		{name: "watch query 1", method: http.MethodGet, path: "/apis/example.com/v1/widgets", query: "watch=1", want: VerbWatch},
		{name: "watch query false", method: http.MethodGet, path: "/apis/example.com/v1/widgets", query: "watch=false", want: VerbList},
		{name: "watch query garbage", method: http.MethodGet, path: "/apis/example.com/v1/widgets", query: "watch=yes", want: VerbList},
		{name: "watchy param is not watch", method: http.MethodGet, path: "/apis/example.com/v1/widgets", query: "watcher=true", want: VerbList},
		{name: "legacy watch path", method: http.MethodGet, path: "/api/v1/watch/namespaces/ns/pods", want: VerbWatch},
		{name: "legacy watch path named", method: http.MethodGet, path: "/apis/apps/v1/watch/namespaces/ns/deployments/d", want: VerbWatch},
		{name: "get group named", method: http.MethodGet, path: "/apis/apps/v1/namespaces/ns/deployments/d", want: VerbGet},
		{name: "get subresource", method: http.MethodGet, path: "/api/v1/namespaces/ns/pods/p/log", want: VerbGet},
		{name: "get cluster scoped", method: http.MethodGet, path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", want: VerbGet},
		{name: "list cluster scoped", method: http.MethodGet, path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", want: VerbList},
		{name: "list namespaces", method: http.MethodGet, path: "/api/v1/namespaces", want: VerbList},
		{name: "get namespace", method: http.MethodGet, path: "/api/v1/namespaces/ns", want: VerbGet},
		{name: "update namespace status", method: http.MethodPut, path: "/api/v1/namespaces/ns/status", want: VerbUpdate},
		{name: "namespace finalize", method: http.MethodPut, path: "/api/v1/namespaces/ns/finalize", want: VerbUpdate},
		{name: "create namespace", method: http.MethodPost, path: "/api/v1/namespaces", want: VerbCreate},
		{name: "delete namespace", method: http.MethodDelete, path: "/api/v1/namespaces/ns", want: VerbDelete},
		{name: "create", method: http.MethodPost, path: "/apis/example.com/v1/namespaces/ns/widgets", want: VerbCreate},
		{name: "create subresource", method: http.MethodPost, path: "/api/v1/namespaces/ns/pods/p/eviction", want: VerbCreate},
		{name: "update", method: http.MethodPut, path: "/apis/example.com/v1/namespaces/ns/widgets/w", want: VerbUpdate},
		{name: "update status", method: http.MethodPut, path: "/apis/example.com/v1/namespaces/ns/widgets/w/status", want: VerbUpdate},
		{name: "patch", method: http.MethodPatch, path: "/apis/example.com/v1/namespaces/ns/widgets/w", want: VerbPatch},
		{name: "delete", method: http.MethodDelete, path: "/apis/example.com/v1/namespaces/ns/widgets/w", want: VerbDelete},
		{name: "deletecollection", method: http.MethodDelete, path: "/apis/example.com/v1/namespaces/ns/widgets", want: VerbDeleteCollection},
		{name: "deletecollection cluster", method: http.MethodDelete, path: "/apis/example.com/v1/clusterwidgets", want: VerbDeleteCollection},
		{name: "head is other", method: http.MethodHead, path: "/api/v1/namespaces/ns/pods/p", want: VerbOther},
		{name: "discovery api", method: http.MethodGet, path: "/api", want: VerbNonResource},
		{name: "discovery apis", method: http.MethodGet, path: "/apis", want: VerbNonResource},
		{name: "discovery group", method: http.MethodGet, path: "/apis/apps", want: VerbNonResource},
		{name: "discovery group version", method: http.MethodGet, path: "/apis/apps/v1", want: VerbNonResource},
		{name: "discovery core version", method: http.MethodGet, path: "/api/v1", want: VerbNonResource},
		{name: "discovery core version slash", method: http.MethodGet, path: "/api/v1/", want: VerbNonResource},
		{name: "version", method: http.MethodGet, path: "/version", want: VerbNonResource},
		{name: "openapi", method: http.MethodGet, path: "/openapi/v3/apis/apps/v1", want: VerbNonResource},
		{name: "healthz post", method: http.MethodPost, path: "/healthz", want: VerbNonResource},
		{name: "root", method: http.MethodGet, path: "/", want: VerbNonResource},
		{name: "empty", method: http.MethodGet, path: "", want: VerbNonResource},
		{name: "host prefix stripped", method: http.MethodGet, path: "/k8s/clusters/c1/api/v1/namespaces/ns/pods/p", prefix: "/k8s/clusters/c1", want: VerbGet},
		{name: "host prefix list", method: http.MethodGet, path: "/k8s/clusters/c1/apis/apps/v1/deployments", prefix: "/k8s/clusters/c1", want: VerbList},
		{name: "host prefix missing", method: http.MethodGet, path: "/api/v1/pods", prefix: "/k8s/clusters/c1", want: VerbNonResource},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := verbOf(tt.method, tt.path, tt.query, tt.prefix).String(); got != tt.want {
				t.Errorf("verbOf(%s %s?%s) = %q, want %q", tt.method, tt.path, tt.query, got, tt.want)
			}
		})
	}
}

func TestHostPathPrefix(t *testing.T) {
	tests := []struct{ host, want string }{
		{"", ""},
		{"127.0.0.1:6443", ""},
		{"https://127.0.0.1:6443", ""},
		{"https://127.0.0.1:6443/", ""},
		{"https://proxy.example/k8s/clusters/c1/", "/k8s/clusters/c1"},
		{"proxy.example/k8s", "/k8s"},
	}
	for _, tt := range tests {
		if got := hostPathPrefix(tt.host); got != tt.want {
			t.Errorf("hostPathPrefix(%q) = %q, want %q", tt.host, got, tt.want)
		}
	}
}

func TestVerbOfDoesNotAllocate(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		_ = verbOf(http.MethodGet, "/apis/example.com/v1/namespaces/ns/widgets/w", "watch=true", "")
	})
	if allocs != 0 {
		t.Errorf("verbOf allocates %v times per call, want 0", allocs)
	}
}
