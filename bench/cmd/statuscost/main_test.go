package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs every variant on a few Items against a real API server: each
// write must be accepted and leave the conditions its variant claims, and
// the table must have a row per variant.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	var out bytes.Buffer
	if err := run(t.Context(), options{items: 3, rounds: 2}, &out); err != nil {
		t.Fatal(err)
	}
	for _, v := range variants("2026-01-01T00:00:00Z") {
		if !strings.Contains(out.String(), "| "+v.name+" | ") {
			t.Errorf("no row for variant %s in:\n%s", v.name, out.String())
		}
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for _, o := range []options{{items: 0, rounds: 2}, {items: 1, rounds: 1}} {
		if err := run(t.Context(), o, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "-items must be") {
			t.Errorf("run(%+v) = %v, want the options' error", o, err)
		}
	}
}
