package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

func TestPermissionsOf(t *testing.T) {
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{"example.operatorkit.io"}, Resources: []string{"webapps", "webapps/status"}, Verbs: []string{"get", "patch"}},
	}
	got := PermissionsOf(rules, "ns", func(verb, _, resource string) bool { return !(verb == "get" && resource == "webapps/status") })
	var s []string
	for _, p := range got {
		s = append(s, p.String())
	}
	want := `get webapps.example.operatorkit.io in namespace "ns"|patch webapps.example.operatorkit.io in namespace "ns"|patch webapps.example.operatorkit.io/status in namespace "ns"`
	if strings.Join(s, "|") != want {
		t.Fatalf("PermissionsOf = %q", strings.Join(s, "|"))
	}
	if p := (Permission{Verb: "list", Resource: "configmaps"}); p.String() != "list configmaps in all namespaces" {
		t.Fatalf("String() = %q", p)
	}
}

func TestFailIsOneLine(t *testing.T) {
	var buf bytes.Buffer
	if code := Fail(&buf, "cmd", 3, errors.New("first\nsecond  third")); code != 3 || buf.String() != "cmd: first second third\n" {
		t.Fatalf("Fail wrote %q, returned %d", buf.String(), code)
	}
}

func TestListen(t *testing.T) {
	if _, err := Listen("no-port"); err == nil || !strings.Contains(err.Error(), "-metrics-address") {
		t.Fatalf("Listen(no-port) error = %v", err)
	}
	s, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL() = %s", s.URL())
	}
	s.ln.Close()
}
