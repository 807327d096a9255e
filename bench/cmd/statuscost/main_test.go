package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestRun runs every variant of both kinds on a few objects against a real
// API server: each write must be accepted and leave what its variant claims
// (the conditions of a status variant, the data, label and controller
// reference of a configmap one), and the table must have a row per
// variant.
func TestRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	for _, kind := range []string{kindStatus, kindConfigMap} {
		t.Run(kind, func(t *testing.T) {
			var out bytes.Buffer
			if err := run(t.Context(), options{kind: kind, items: 3, rounds: 3}, &out); err != nil {
				t.Fatal(err)
			}
			want := []string{"apply", "merge", "update"}
			if kind == kindStatus {
				want = nil
				for _, v := range variants("2026-01-01T00:00:00Z") {
					want = append(want, v.name)
				}
			}
			for _, name := range want {
				if !strings.Contains(out.String(), "| "+name+" | ") {
					t.Errorf("no row for variant %s in:\n%s", name, out.String())
				}
			}
		})
	}
}

func TestRunRejectsBadOptions(t *testing.T) {
	for o, want := range map[options]string{
		{kind: kindStatus, items: 0, rounds: 2}:    "-items must be",
		{kind: kindConfigMap, items: 1, rounds: 1}: "-items must be",
		{kind: "secret", items: 1, rounds: 2}:      `-kind must be status or configmap, got "secret"`,
	} {
		if err := run(t.Context(), o, new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run(%+v) = %v, want an error with %q", o, err, want)
		}
	}
}
