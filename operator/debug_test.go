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
	type booted struct {
		f   *framework.Framework
		inf *informertest.Informer
	}
	boot := func(name string) booted {
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
		return booted{f: f, inf: inf}
	}
	a, b := boot("alpha"), boot("beta")
	// Reconciled in this order: first by alpha, second by beta, third by
	// alpha.
	for _, step := range []struct {
		by   booted
		name string
	}{{a, "first"}, {b, "second"}, {a, "third"}} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("test.operatorkit.io/v1")
		obj.SetKind("Thing")
		obj.SetNamespace("ns")
		obj.SetName(step.name)
		obj.SetUID(types.UID("uid-" + step.name))
		obj.SetResourceVersion("1")
		obj.SetCreationTimestamp(metav1.Now())
		if err := step.by.inf.Add(obj); err != nil {
			t.Fatal(err)
		}
		err := wait.PollUntilContextTimeout(context.Background(), time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
			return len(step.by.f.Traces("ns/"+step.name)) > 0, nil
		})
		if err != nil {
			t.Fatalf("ns/%s not reconciled: %v", step.name, err)
		}
	}
	h := debugHandler([]*framework.Framework{a.f, b.f})
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
