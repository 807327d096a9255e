package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
)

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
