package operator

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/operatorkit/operatorkit/framework"
)

// TestDebugHandlerOfSeveralFrameworksWithNoTraces: before any
// reconciliation the JSON list of several Frameworks is an empty list, as
// one Framework's is, not null (which a client that iterates it, such as
// jq '.[]', refuses).
func TestDebugHandlerOfSeveralFrameworksWithNoTraces(t *testing.T) {
	a, b := bootForDebug(t, "alpha"), bootForDebug(t, "beta")
	for _, h := range []http.Handler{a.f.DebugHandler(), framework.NewDebugHandler(a.f, b.f)} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, framework.DebugPath, nil))
		if got := strings.TrimSpace(rec.Body.String()); rec.Code != http.StatusOK || got != "[]" {
			t.Errorf("list with no traces = %d %q, want 200 []", rec.Code, got)
		}
	}
}
