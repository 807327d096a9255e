package framework

import (
	"strings"
	"testing"
	"time"

	"github.com/operatorkit/operatorkit/trace"
)

// TestTraceTextOneLinePerField: the debug endpoint's text form wrote a
// multi-line error (errors.Join's) and names with control characters as
// they were, so a step's error broke into lines that read as other steps
// or as another trace, and an index row into lines naming no object. Each
// field is on its line now, its control characters escaped.
func TestTraceTextOneLinePerField(t *testing.T) {
	start := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tr := trace.Trace{
		Object:      "ns/a",
		ResourceSet: "v1\nv2",
		Start:       start,
		Result:      "error",
		Error:       "first\nsecond",
		Steps: []trace.Step{
			{Resource: "config\tmap", Step: "get current state", Outcome: trace.OutcomeError, Error: "conflict\n" + start.Format(time.RFC3339Nano) + "  ns/forged  set=x"},
			{Resource: "deployment", Step: "ensure created", Outcome: trace.OutcomeDone},
		},
	}
	var b strings.Builder
	formatTrace(&b, tr)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 4 { // header, error, two steps
		t.Fatalf("text form has %d lines, want 4:\n%s", len(lines), b.String())
	}
	for _, want := range []string{`set=v1\nv2`, `error: first\nsecond`, `config\tmap`, `conflict\n2026`} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text form lacks %q:\n%s", want, b.String())
		}
	}
	for _, l := range lines[1:] {
		if !strings.HasPrefix(l, "  ") {
			t.Errorf("line %q is neither a header, the error nor a step", l)
		}
	}

	b.Reset()
	formatSummaries(&b, []ObjectSummary{{Object: "ns/a", ResourceSet: "v1", Result: "error", Error: "first\nsecond"}, {Object: "ns/b", Result: "success"}}, false)
	if rows := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n"); len(rows) != 3 || !strings.HasPrefix(rows[1], "ns/a") || !strings.HasSuffix(rows[1], `first\nsecond`) {
		t.Errorf("index = %q, want a header and one row per object", rows)
	}
}
