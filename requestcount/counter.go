package requestcount

import (
	"net/http"
	"net/url"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// Counter counts the requests sent through the rest.Configs it wrapped. The
// zero value is not usable; create one with [New]. A Counter is safe for
// concurrent use.
type Counter struct {
	mu     sync.Mutex
	counts map[key]int64
}

// key is one (verb, status code) pair; code 0 means no response.
type key struct {
	verb verb
	code int
}

// New returns an empty Counter.
func New() *Counter {
	return &Counter{counts: make(map[key]int64)}
}

// Wrap returns a copy of cfg whose transport counts every request in c, and
// leaves cfg itself unchanged. The counting wrapper is composed with any
// WrapTransport cfg already has, outside it (rest.Config.Wrap puts the newest
// wrapper outermost): requests an earlier wrapper fails or answers itself
// are counted too, with code 0 for an error. Wrapping the result again, with
// this or another Counter, counts in both.
// Every client built from the returned config counts; clients built from cfg
// do not. cfg must not be nil.
func (c *Counter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	prefix := hostPathPrefix(cfg.Host)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &roundTripper{counter: c, next: rt, pathPrefix: prefix}
	})
	return out
}

// Snapshot returns the totals counted so far. The returned maps are the
// caller's own; verbs and codes never seen are absent from them.
func (c *Counter) Snapshot() Snapshot {
	s := Snapshot{ByVerb: make(map[string]int64), ByCode: make(map[int]int64)}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.counts {
		s.ByVerb[k.verb.String()] += n
		s.ByCode[k.code] += n
		s.Total += n
		if k.verb.isWrite() {
			s.Writes += n
		}
		switch k.code / 100 {
		case 4:
			s.ClientErrors += n
		case 5:
			s.ServerErrors += n
		}
	}
	return s
}

func (c *Counter) add(v verb, code int) {
	c.mu.Lock()
	c.counts[key{verb: v, code: code}]++
	c.mu.Unlock()
}

// roundTripper counts each request it passes on to next.
type roundTripper struct {
	counter    *Counter
	next       http.RoundTripper
	pathPrefix string
}

// RoundTrip sends req through the wrapped transport and counts it under its
// verb and the response's status code (0 when there is no response).
func (rt *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := rt.next.RoundTrip(req)
	code := 0
	if err == nil && resp != nil {
		code = resp.StatusCode
	}
	rt.counter.add(verbOf(req.Method, req.URL.Path, req.URL.RawQuery, rt.pathPrefix), code)
	return resp, err
}

// WrappedRoundTripper returns the wrapped transport, so that client-go
// helpers that look for the underlying transport (to close idle
// connections, for instance) find it.
func (rt *roundTripper) WrappedRoundTripper() http.RoundTripper { return rt.next }

// hostPathPrefix returns the path part of a rest.Config.Host such as
// "https://proxy.example/clusters/c1", without a trailing slash, or "" when
// the host has no path or cannot be parsed.
func hostPathPrefix(host string) string {
	if host == "" {
		return ""
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	u, err := url.Parse(host)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(u.Path, "/")
}
