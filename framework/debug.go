package framework

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
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
// it on a loopback or otherwise protected address. An operator of several
// Frameworks serves one NewDebugHandler of them all.
func (f *Framework) DebugHandler() http.Handler { return NewDebugHandler(f) }

// NewDebugHandler returns the DebugHandler of several Frameworks (the
// Frameworks of one operator, one per kind), for DebugPath and below, in
// the formats DebugHandler serves. The list page merges their lists into
// one, most recently reconciled first as each Framework's list is, each
// entry naming its Framework (ObjectSummary.Controller; a CONTROLLER
// column in text when there are several). An object's page with
// ?controller= (DebugControllerParam) is that Framework's (a 404 when no
// Framework has that name, or it has no traces of the object); without
// it, the page of the one Framework that knows the object, a 300 linking
// to the page of each when several do (two kinds with an object of the
// same namespace/name), and when none does a 404 naming the object and
// the Frameworks asked. Frameworks are told apart by Config.Name: give
// them distinct names. The operator package serves it for every
// Framework of an Operator (operator.Config.MetricsAddress).
func NewDebugHandler(frameworks ...*Framework) http.Handler {
	names := make([]string, len(frameworks))
	q := make([]string, len(frameworks))
	for i, f := range frameworks {
		names[i] = f.name
		q[i] = strconv.Quote(f.name)
	}
	quoted := strings.Join(q, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		query := r.URL.Query()
		text := query.Get("format") == "text" || strings.Contains(r.Header.Get("Accept"), "text/plain")
		asked := frameworks
		if c := query.Get(DebugControllerParam); c != "" {
			i := slices.Index(names, c)
			switch {
			case i < 0 && len(frameworks) == 1:
				http.Error(w, fmt.Sprintf("this is the debug page of the Framework %q, not of %q", names[0], c), http.StatusNotFound)
				return
			case i < 0:
				http.Error(w, fmt.Sprintf("no Framework named %q; the Frameworks are %s", c, quoted), http.StatusNotFound)
				return
			}
			asked = frameworks[i : i+1]
		}
		key := strings.Trim(strings.TrimPrefix(r.URL.Path, DebugPath), "/")
		if key == "" {
			serveList(w, asked, text)
			return
		}
		var page *ObjectDebug
		var links []string
		for _, f := range asked {
			traces, plans := f.traces.get(key)
			if traces == nil && plans == nil {
				continue
			}
			if page == nil {
				page = &ObjectDebug{Controller: f.name, Object: key, Traces: traces, Plans: debugPlans(plans)}
			}
			query.Set(DebugControllerParam, f.name)
			links = append(links, r.URL.Path+"?"+query.Encode())
		}
		switch {
		case page == nil && len(asked) == 1:
			http.Error(w, fmt.Sprintf("no traces kept for %q (never reconciled, or dropped from the bounded store)", key), http.StatusNotFound)
		case page == nil:
			http.Error(w, fmt.Sprintf("no traces kept for %q by any of the Frameworks %s (never reconciled, or dropped from their bounded stores)", key, quoted), http.StatusNotFound)
		case len(links) > 1:
			http.Error(w, fmt.Sprintf("%q is an object of several Frameworks; the page of each:\n%s", key, strings.Join(links, "\n")), http.StatusMultipleChoices)
		case !text:
			writeJSON(w, page)
		default:
			var b strings.Builder
			for i := len(page.Traces) - 1; i >= 0; i-- {
				formatTrace(&b, page.Traces[i])
				b.WriteByte('\n')
			}
			if page.Plans != nil {
				b.WriteString("last dry-run plan:\n")
				FormatPlans(&b, page.Plans)
			}
			writeText(w, b.String())
		}
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

// serveList serves the list of the objects the Frameworks reconciled,
// most recently reconciled first; objects reconciled at the same time stay
// in the order of the Frameworks.
func serveList(w http.ResponseWriter, frameworks []*Framework, text bool) {
	list := []ObjectSummary{} // [], not null, when empty
	for _, f := range frameworks {
		own := f.traces.summaries()
		for i := range own {
			own[i].Controller = f.name
		}
		list = append(list, own...)
	}
	if len(frameworks) > 1 {
		slices.SortStableFunc(list, func(a, b ObjectSummary) int { return b.Start.Compare(a.Start) })
	}
	if !text {
		writeJSON(w, list)
		return
	}
	var b strings.Builder
	formatSummaries(&b, list, len(frameworks) > 1)
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
