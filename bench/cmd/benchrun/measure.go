package main

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/bench/internal/stats"
	"github.com/operatorkit/operatorkit/requestcount"
)

// serverCounts are the API server's own request counts
// (apiserver_request_total) for the resources the benchmark touches.
type serverCounts struct {
	// ByVerb counts requests by lower-case verb (create, update, patch,
	// delete, deletecollection, get, list, watch).
	ByVerb map[string]int64
	// Writes counts create, update, patch, delete and deletecollection.
	Writes int64
	// ClientErrors counts 4xx answers.
	ClientErrors int64
	// EventWrites counts the writes of Events (core/v1 and events.k8s.io):
	// not part of the cross-check, but the one other kind a contender may
	// write (the operatorkit contenders' Frameworks record Events on
	// failures and condition changes).
	EventWrites int64
}

func (s serverCounts) sub(e serverCounts) serverCounts {
	out := serverCounts{ByVerb: map[string]int64{}, Writes: s.Writes - e.Writes, ClientErrors: s.ClientErrors - e.ClientErrors, EventWrites: s.EventWrites - e.EventWrites}
	for v, n := range s.ByVerb {
		if d := n - e.ByVerb[v]; d != 0 {
			out.ByVerb[v] = d
		}
	}
	return out
}

// benchResources are the resources whose requests the cross-check counts.
var benchResources = map[string]bool{"items": true, "configmaps": true}

// scrapeServer reads apiserver_request_total from the API server's /metrics.
func scrapeServer(ctx context.Context, rc rest.Interface) (serverCounts, error) {
	out := serverCounts{ByVerb: map[string]int64{}}
	raw, err := rc.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return out, fmt.Errorf("scrape API server metrics: %w", err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return out, fmt.Errorf("parse API server metrics: %w", err)
	}
	mf := families["apiserver_request_total"]
	if mf == nil {
		return out, fmt.Errorf("API server metrics have no apiserver_request_total")
	}
	for _, m := range mf.GetMetric() {
		var verb, res, code string
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "verb":
				verb = strings.ToLower(l.GetValue())
			case "resource":
				res = l.GetValue()
			case "code":
				code = l.GetValue()
			}
		}
		n := int64(m.GetCounter().GetValue())
		// The API server labels requests with the HTTP method for some
		// verbs; use the names of the contender's counter.
		switch verb {
		case "post":
			verb = "create"
		case "put":
			verb = "update"
		}
		write := false
		switch verb {
		case "create", "update", "patch", "delete", "deletecollection", "apply":
			write = true
		}
		if res == "events" {
			if write {
				out.EventWrites += n
			}
			continue
		}
		if !benchResources[res] {
			continue
		}
		out.ByVerb[verb] += n
		if write {
			out.Writes += n
		}
		if strings.HasPrefix(code, "4") {
			out.ClientErrors += n
		}
	}
	return out, nil
}

// snapshot is everything read at the start and end of a phase.
type snapshot struct {
	contender stats.Stats
	proc      proc.Sample
	// serverProc is the API server process's.
	serverProc proc.Sample
	server     serverCounts
	driver     requestcount.Snapshot
}

func (r *runner) snapshot(ctx context.Context, c *child) (snapshot, error) {
	var s snapshot
	var err error
	if s.contender, err = c.stats(); err != nil {
		return s, err
	}
	if s.proc, err = proc.Read(c.Pid()); err != nil {
		return s, fmt.Errorf("read /proc of contender: %w", err)
	}
	if s.server, err = scrapeServer(ctx, r.metricsClient); err != nil {
		return s, err
	}
	if s.serverProc, err = proc.Read(r.serverPID); err != nil {
		return s, fmt.Errorf("read /proc of the API server: %w", err)
	}
	s.driver = r.driverCounter.Snapshot()
	return s, nil
}
