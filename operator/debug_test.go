package operator

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/operatorkit/operatorkit/framework"
	"github.com/operatorkit/operatorkit/informer/informertest"
)

// TestDebugHandlerOfSeveralFrameworks: with several Frameworks, the list
// page merges their lists most recently reconciled first, as one
// Framework's list is (not one Framework's objects after the other's), and
// an object no Framework knows is a 404 naming the object and the
// Frameworks asked.
func TestDebugHandlerOfSeveralFrameworks(t *testing.T) {
	boot := func(name string) debugBooted { return bootForDebug(t, name) }
	a, b := boot("alpha"), boot("beta")
	// Reconciled in this order: first by alpha, second by beta, third by
	// alpha.
	for _, step := range []struct {
		by   debugBooted
		name string
	}{{a, "first"}, {b, "second"}, {a, "third"}} {
		step.by.reconcile(t, step.name)
	}
	h := framework.NewDebugHandler(a.f, b.f)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}

	rec := get(framework.DebugPath)
	var list []framework.ObjectSummary
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("list = %d %s (%v)", rec.Code, rec.Body, err)
	}
	var objects []string
	for _, s := range list {
		objects = append(objects, s.Object)
	}
	if got, want := strings.Join(objects, " "), "ns/third ns/second ns/first"; got != want {
		t.Errorf("list of objects = %s, want %s (most recently reconciled first)", got, want)
	}

	rec = get(framework.DebugPath + "/ns/missing")
	body := rec.Body.String()
	if rec.Code != http.StatusNotFound {
		t.Fatalf("object no Framework knows = %d %s, want 404", rec.Code, body)
	}
	for _, want := range []string{`"ns/missing"`, `"alpha"`, `"beta"`} {
		if !strings.Contains(body, want) {
			t.Errorf("404 body = %q, want it to name %s", body, want)
		}
	}
	if rec = get(framework.DebugPath + "/ns/second"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"object": "ns/second"`) {
		t.Errorf("object of the second Framework = %d %s", rec.Code, rec.Body)
	}
}

type debugBooted struct {
	f   *framework.Framework
	inf *informertest.Informer
}

// bootForDebug boots a Framework named name, stopped at the test's end.
func bootForDebug(t *testing.T, name string) debugBooted {
	t.Helper()
	inf := informertest.New()
	f, err := framework.New(framework.Config{Name: name, Informer: inf, ResourceRouter: oneResource(t, &crudless{}), DisableFinalizers: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.Boot(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Boot() of %s = %v", name, err)
		}
	})
	select {
	case <-f.Booted():
	case err := <-done:
		t.Fatalf("Boot() of %s returned early: %v", name, err)
	}
	return debugBooted{f: f, inf: inf}
}

// reconcile adds the object ns/name to the Framework's informer and waits
// until the Framework has reconciled it.
func (b debugBooted) reconcile(t *testing.T, name string) {
	t.Helper()
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("test.operatorkit.io/v1")
	obj.SetKind("Thing")
	obj.SetNamespace("ns")
	obj.SetName(name)
	obj.SetUID(types.UID("uid-" + name))
	obj.SetResourceVersion("1")
	obj.SetCreationTimestamp(metav1.Now())
	if err := b.inf.Add(obj); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return len(b.f.Traces("ns/"+name)) > 0, nil
	})
	if err != nil {
		t.Fatalf("ns/%s not reconciled: %v", name, err)
	}
}

// TestDebugHandlerOfAKeyInSeveralFrameworks: two Frameworks (two kinds of
// one operator) reconcile an object of the same namespace/name. The list
// names the Framework of each entry (JSON "controller", a CONTROLLER
// column in text), the page of each is reachable with ?controller=, a key
// alone is a 300 linking to both, and a key only one Framework has still
// works alone.
func TestDebugHandlerOfAKeyInSeveralFrameworks(t *testing.T) {
	a, b := bootForDebug(t, "webapp"), bootForDebug(t, "database")
	a.reconcile(t, "web")
	b.reconcile(t, "web")
	a.reconcile(t, "only")
	h := framework.NewDebugHandler(a.f, b.f)
	get := func(path string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		return rec
	}

	rec := get(framework.DebugPath)
	// Read with the fields the test needs, so that it runs (and fails)
	// on a Framework whose pages do not name their controller.
	var list []struct{ Controller, Object string }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil {
		t.Fatalf("list = %d %s (%v)", rec.Code, rec.Body, err)
	}
	var entries []string
	for _, s := range list {
		entries = append(entries, s.Controller+":"+s.Object)
	}
	if got, want := strings.Join(entries, " "), "webapp:ns/only database:ns/web webapp:ns/web"; got != want {
		t.Errorf("list = %s, want %s (each entry naming its Framework, most recently reconciled first)", got, want)
	}

	rec = get(framework.DebugPath + "?format=text")
	lines := strings.Split(strings.TrimSpace(rec.Body.String()), "\n")
	if rec.Code != http.StatusOK || len(lines) != 4 || !strings.HasPrefix(lines[0], "CONTROLLER") {
		t.Fatalf("text list = %d %q, want one table of 3 objects with a CONTROLLER column", rec.Code, rec.Body)
	}
	for i, want := range []string{"webapp ns/only", "database ns/web", "webapp ns/web"} {
		if got := strings.Join(strings.Fields(lines[i+1])[:2], " "); got != want {
			t.Errorf("text list line %d = %q, want it to start with %s", i+1, lines[i+1], want)
		}
	}

	for _, name := range []string{"webapp", "database"} {
		rec = get(framework.DebugPath + "/ns/web?controller=" + name)
		var d struct{ Controller, Object string }
		if err := json.Unmarshal(rec.Body.Bytes(), &d); rec.Code != http.StatusOK || err != nil || d.Controller != name || d.Object != "ns/web" {
			t.Errorf("ns/web of %s = %d %s (%v), want its page", name, rec.Code, rec.Body, err)
		}
		if rec = get(framework.DebugPath + "/ns/web?format=text&controller=" + name); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "ns/web") {
			t.Errorf("ns/web of %s as text = %d %s", name, rec.Code, rec.Body)
		}
	}
	rec = get(framework.DebugPath + "/ns/web?format=text")
	if body := rec.Body.String(); rec.Code != http.StatusMultipleChoices ||
		!strings.Contains(body, framework.DebugPath+"/ns/web?controller=webapp&format=text") ||
		!strings.Contains(body, framework.DebugPath+"/ns/web?controller=database&format=text") {
		t.Errorf("ns/web of no Framework named = %d %q, want 300 linking to the page of each", rec.Code, body)
	}
	var d struct{ Controller, Object string }
	if rec = get(framework.DebugPath + "/ns/only"); rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &d) != nil || d.Controller != "webapp" {
		t.Errorf("ns/only, which one Framework has = %d %s, want its page", rec.Code, rec.Body)
	}
	if rec = get(framework.DebugPath + "/ns/only?controller=database"); rec.Code != http.StatusNotFound {
		t.Errorf("ns/only of the Framework without it = %d %s, want 404", rec.Code, rec.Body)
	}
	if rec = get(framework.DebugPath + "/ns/web?controller=cache"); rec.Code != http.StatusNotFound || !strings.Contains(rec.Body.String(), `"webapp"`) {
		t.Errorf("ns/web of a Framework the operator has not = %d %s, want 404 naming the Frameworks", rec.Code, rec.Body)
	}

	// An operator of one Framework serves that Framework's handler, which
	// takes the same query.
	for name, code := range map[string]int{"webapp": http.StatusOK, "database": http.StatusNotFound} {
		rec = httptest.NewRecorder()
		framework.NewDebugHandler(a.f).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, framework.DebugPath+"/ns/web?controller="+name, nil))
		if rec.Code != code {
			t.Errorf("ns/web?controller=%s of the Framework webapp alone = %d %s, want %d", name, rec.Code, rec.Body, code)
		}
	}
}
