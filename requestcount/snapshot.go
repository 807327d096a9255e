package requestcount

import (
	"fmt"
	"sort"
	"strings"
)

// Snapshot is a copy of a Counter's totals at one moment, or the difference
// of two such copies (see [Snapshot.Sub]).
type Snapshot struct {
	// ByVerb counts requests by verb, keyed by the Verb* constants.
	ByVerb map[string]int64
	// ByCode counts requests by HTTP status code; 0 counts requests that got
	// no response.
	ByCode map[int]int64
	// Total is the number of requests, the sum of ByVerb (and of ByCode).
	Total int64
	// Writes counts the requests with verb create, update, patch, delete or
	// deletecollection, whatever their outcome.
	Writes int64
	// ClientErrors counts the responses with a 4xx status code.
	ClientErrors int64
	// ServerErrors counts the responses with a 5xx status code.
	ServerErrors int64
}

// Sub returns s minus earlier: the requests counted after earlier was taken,
// when both come from the same Counter. Map entries whose difference is zero
// are left out. Neither operand is modified.
func (s Snapshot) Sub(earlier Snapshot) Snapshot {
	return Snapshot{
		ByVerb:       subMap(s.ByVerb, earlier.ByVerb),
		ByCode:       subMap(s.ByCode, earlier.ByCode),
		Total:        s.Total - earlier.Total,
		Writes:       s.Writes - earlier.Writes,
		ClientErrors: s.ClientErrors - earlier.ClientErrors,
		ServerErrors: s.ServerErrors - earlier.ServerErrors,
	}
}

// String formats s on one line for logs and summaries, for example
// "total=7 writes=2 clientErrors=1 serverErrors=0 verbs=[create=2 get=1 list=2 watch=2] codes=[200=5 201=1 409=1]".
// Verbs and codes are sorted.
func (s Snapshot) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "total=%d writes=%d clientErrors=%d serverErrors=%d verbs=[", s.Total, s.Writes, s.ClientErrors, s.ServerErrors)
	verbs := make([]string, 0, len(s.ByVerb))
	for v := range s.ByVerb {
		verbs = append(verbs, v)
	}
	sort.Strings(verbs)
	for i, v := range verbs {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", v, s.ByVerb[v])
	}
	b.WriteString("] codes=[")
	codes := make([]int, 0, len(s.ByCode))
	for c := range s.ByCode {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for i, c := range codes {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%d=%d", c, s.ByCode[c])
	}
	b.WriteByte(']')
	return b.String()
}

func subMap[K comparable](a, b map[K]int64) map[K]int64 {
	out := make(map[K]int64, len(a))
	for k, n := range a {
		if d := n - b[k]; d != 0 {
			out[k] = d
		}
	}
	for k, n := range b {
		if _, ok := a[k]; !ok && n != 0 {
			out[k] = -n
		}
	}
	return out
}
