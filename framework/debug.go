package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/operatorkit/operatorkit/trace"
)

// DebugPath is where DebugHandler serves: DebugPath lists recently reconciled
// objects with their last result, DebugPath + "/<namespace>/<name>" (or
// "/<name>" for cluster-scoped objects) shows an object's last traces and,
// in dry-run mode, its last plan. A query ?controller=<name> names the
// Framework (Config.Name) whose page is asked for: an operator with
// several Frameworks may have an object of the same key in two of them.
const DebugPath = "/debug/reconciliations"

// DebugControllerParam is the query parameter of a debug page that names
// the Framework (Config.Name, the controller label of its metrics) asked
// for: a Framework of another name answers 404.
const DebugControllerParam = "controller"

// ObjectDebug is the JSON document served for one object.
type ObjectDebug struct {
	// Controller is the name of the Framework that reconciled the object
	// (Config.Name, the controller label of its metrics).
	Controller string `json:"controller"`
	// Object is the object's key, "namespace/name" (or "name").
	Object string `json:"object"`
	// Traces are the object's kept traces, oldest first (Framework.Traces).
	Traces []trace.Trace `json:"traces"`
	// Plans is the object's last dry-run plan (Config.DryRun), each change
	// as it describes itself; nil without one.
	Plans []ResourcePlan `json:"plans,omitempty"`
}

// DebugHandler returns an http.Handler for DebugPath and below. It answers
// JSON, or readable text when the request accepts text/plain (curl -H
// 'Accept: text/plain') or has ?format=text: a line per object, or per
// trace and step, with control characters in names and errors (the lines
// of a multi-line error) escaped as in a Go string ("\n"). A request whose
// ?controller= (DebugControllerParam) names another Framework is a 404.
// Mount it next to /metrics:
//
//	mux.Handle(framework.DebugPath, f.DebugHandler())
//	mux.Handle(framework.DebugPath+"/", f.DebugHandler())
//
// Traces hold object keys, resource and step names, durations and error
// messages, never object contents. The last dry-run plan of an object
// (Config.DryRun) is served as its changes describe themselves
// (ChangeDescriber: resource/child's name the fields and values that
// differ, with a Secret's values hidden), a change that does not describe
// itself by its type only (the plan command shows it whole). Still, serve
// it on a loopback or otherwise protected address.
func (f *Framework) DebugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		if c := r.URL.Query().Get(DebugControllerParam); c != "" && c != f.name {
			http.Error(w, fmt.Sprintf("this is the debug page of the Framework %q, not of %q", f.name, c), http.StatusNotFound)
			return
		}
		text := r.URL.Query().Get("format") == "text" || strings.Contains(r.Header.Get("Accept"), "text/plain")
		key := strings.Trim(strings.TrimPrefix(r.URL.Path, DebugPath), "/")
		if key == "" {
			f.serveList(w, text)
			return
		}
		traces, plans := f.traces.get(key)
		plans = debugPlans(plans)
		if traces == nil && plans == nil {
			http.Error(w, fmt.Sprintf("no traces kept for %q (never reconciled, or dropped from the bounded store)", key), http.StatusNotFound)
			return
		}
		if !text {
			writeJSON(w, ObjectDebug{Controller: f.name, Object: key, Traces: traces, Plans: plans})
			return
		}
		var b strings.Builder
		for i := len(traces) - 1; i >= 0; i-- {
			formatTrace(&b, traces[i])
			b.WriteByte('\n')
		}
		if plans != nil {
			b.WriteString("last dry-run plan:\n")
			FormatPlans(&b, plans)
		}
		writeText(w, b.String())
	})
}

// describedChange is a change as the debug endpoint shows it: the lines it
// describes itself with. JSON encodes it as those lines.
type describedChange []string

func (d describedChange) Describe() []string { return d }

// debugPlans returns plans with every change replaced by its description
// (ChangeDescriber), or by its type when it has none: never a change's
// contents, which may be an object with a Secret's data.
func debugPlans(plans []ResourcePlan) []ResourcePlan {
	if plans == nil {
		return nil
	}
	out := make([]ResourcePlan, len(plans))
	for i, p := range plans {
		p.Create, p.Update, p.Delete = debugChange(p.Create), debugChange(p.Update), debugChange(p.Delete)
		out[i] = p
	}
	return out
}

func debugChange(c any) any {
	switch d := c.(type) {
	case nil:
		return nil
	case ChangeDescriber:
		return describedChange(d.Describe())
	}
	return describedChange{fmt.Sprintf("a %T (its contents are not shown here; the plan command shows them)", c)}
}

func (f *Framework) serveList(w http.ResponseWriter, text bool) {
	list := f.traces.summaries()
	for i := range list {
		list[i].Controller = f.name
	}
	if !text {
		writeJSON(w, list)
		return
	}
	var b strings.Builder
	formatSummaries(&b, list)
	writeText(w, b.String())
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func writeText(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = w.Write([]byte(s))
}
