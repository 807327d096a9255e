package requestcount

import (
	"net/http"
	"strconv"
	"strings"
)

// The verbs a request is counted under. The first eight are the API server's
// resource verbs; see the package documentation for how a request maps to
// one of them.
const (
	VerbGet              = "get"
	VerbList             = "list"
	VerbWatch            = "watch"
	VerbCreate           = "create"
	VerbUpdate           = "update"
	VerbPatch            = "patch"
	VerbDelete           = "delete"
	VerbDeleteCollection = "deletecollection"
	// VerbNonResource counts requests to URLs that name no resource:
	// discovery (/api, /apis, /apis/{group}/{version}), /version, /openapi,
	// /healthz and the like.
	VerbNonResource = "nonresource"
	// VerbOther counts requests to resource URLs with a method that maps to
	// none of the resource verbs above (HEAD, OPTIONS, ...).
	VerbOther = "other"
)

// verb is the index of a verb name in verbNames; it keeps the counter's map
// key small and comparable.
type verb uint8

const (
	verbGet verb = iota
	verbList
	verbWatch
	verbCreate
	verbUpdate
	verbPatch
	verbDelete
	verbDeleteCollection
	verbNonResource
	verbOther
	numVerbs
)

var verbNames = [numVerbs]string{
	verbGet:              VerbGet,
	verbList:             VerbList,
	verbWatch:            VerbWatch,
	verbCreate:           VerbCreate,
	verbUpdate:           VerbUpdate,
	verbPatch:            VerbPatch,
	verbDelete:           VerbDelete,
	verbDeleteCollection: VerbDeleteCollection,
	verbNonResource:      VerbNonResource,
	verbOther:            VerbOther,
}

func (v verb) String() string { return verbNames[v] }

// isWrite reports whether v changes state on the server.
func (v verb) isWrite() bool {
	switch v {
	case verbCreate, verbUpdate, verbPatch, verbDelete, verbDeleteCollection:
		return true
	}
	return false
}

// verbOf classifies a request by method, path and raw query. pathPrefix is
// the path of the server URL (rest.Config.Host), if any, and is stripped
// first. The rules are in the package documentation.
func verbOf(method, path, rawQuery, pathPrefix string) verb {
	if pathPrefix != "" {
		p, ok := strings.CutPrefix(path, pathPrefix)
		if !ok {
			return verbNonResource
		}
		path = p
	}
	s := segments{rest: strings.TrimPrefix(path, "/")}

	switch s.next() {
	case "api":
		if s.next() == "" { // version
			return verbNonResource
		}
	case "apis":
		if s.next() == "" || s.next() == "" { // group, version
			return verbNonResource
		}
	default:
		return verbNonResource
	}

	// What follows the version: [watch/] [namespaces/{ns}/] {resource}[/{name}[/...]].
	var parts [3]string
	n := 0
	watchSegment := false
	for n < len(parts) {
		seg := s.next()
		if seg == "" {
			break
		}
		if n == 0 && !watchSegment && seg == "watch" {
			watchSegment = true
			continue
		}
		parts[n] = seg
		n++
	}
	if n > 0 && parts[0] == "namespaces" && n > 1 {
		// Namespace-scoped resource, unless the URL is the Namespace itself
		// or one of its own subresources.
		if n > 2 && parts[2] != "status" && parts[2] != "finalize" {
			// parts[2] is the resource; read its name, if any.
			parts[0], parts[1] = parts[2], s.next()
			n = 1
			if parts[1] != "" {
				n = 2
			}
		}
	}
	if n == 0 {
		return verbNonResource // discovery: /api/v1, /apis/{group}/{version}
	}
	named := n > 1

	switch method {
	case http.MethodGet:
		if watchSegment || watchQuery(rawQuery) {
			return verbWatch
		}
		if named {
			return verbGet
		}
		return verbList
	case http.MethodPost:
		return verbCreate
	case http.MethodPut:
		return verbUpdate
	case http.MethodPatch:
		return verbPatch
	case http.MethodDelete:
		if named {
			return verbDelete
		}
		return verbDeleteCollection
	}
	return verbOther
}

// segments iterates over the '/'-separated segments of a path without
// allocating. An empty segment (from "//" or a trailing '/') ends it.
type segments struct{ rest string }

func (s *segments) next() string {
	seg, rest, _ := strings.Cut(s.rest, "/")
	if seg == "" {
		s.rest = ""
		return ""
	}
	s.rest = rest
	return seg
}

// watchQuery reports whether the raw query has a "watch" parameter whose
// value strconv.ParseBool reads as true, as the API server does.
func watchQuery(rawQuery string) bool {
	for rawQuery != "" {
		var kv string
		kv, rawQuery, _ = strings.Cut(rawQuery, "&")
		k, v, _ := strings.Cut(kv, "=")
		if k != "watch" {
			continue
		}
		b, err := strconv.ParseBool(v)
		return err == nil && b
	}
	return false
}
