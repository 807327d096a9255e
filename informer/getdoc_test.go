package informer_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/informer"
)

// TestGetDocSaysWhatGetReturns keeps the doc comment of Informer.Get true
// to what Get returns on the typed path (RESTConfig with ObjectType, what
// operator.Operator.Informer makes): an object of ObjectType's type. The
// doc said "an *unstructured.Unstructured unless Config.Transform returns
// something else", which sent the author of a resource reading a typed
// cache (a Secret its owner references) to convert maps.
func TestGetDocSaysWhatGetReturns(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(fakeConfigMaps))
	defer srv.Close()
	inf, err := informer.New(informer.Config{
		RESTConfig: &rest.Config{Host: srv.URL}, ObjectType: &corev1.ConfigMap{},
		GVR: corev1.SchemeGroupVersion.WithResource("configmaps"), Namespace: "default", ResyncPeriod: -1,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- inf.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := inf.WaitForCacheSync(ctx); err != nil {
		t.Fatal(err)
	}
	obj, exists, err := inf.Get("default/c1")
	if err != nil || !exists {
		t.Fatalf("Get() = %v, %v, %v", obj, exists, err)
	}
	if _, ok := obj.(*corev1.ConfigMap); !ok {
		t.Fatalf("Get() on the typed path = %T, want *v1.ConfigMap", obj)
	}

	doc := methodDoc(t, "informer.go", "Get")
	if strings.Contains(doc, "is an *unstructured.Unstructured unless") || !strings.Contains(doc, "of ObjectType's type with RESTConfig or RESTClient") {
		t.Errorf("Informer.Get's doc does not say that the typed path returns ObjectType's type:\n%s", doc)
	}
}

// methodDoc returns the doc comment of the method name of *Informer in
// file, on one line.
func methodDoc(t *testing.T, file, name string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv != nil && fd.Name.Name == name && fd.Doc != nil {
			return strings.Join(strings.Fields(fd.Doc.Text()), " ")
		}
	}
	t.Fatalf("%s has no documented method %s", file, name)
	return ""
}
