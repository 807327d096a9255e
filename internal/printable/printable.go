// Package printable tells the strings that a Kubernetes API server and
// client-go take as names of a writer: field managers, user agents and
// label-free metric values, and escapes the control characters of text
// shown on one line (Escape).
package printable

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxFieldManager is the longest field manager the API server accepts.
const MaxFieldManager = 128

// String reports whether s is valid UTF-8 of printable characters only
// (unicode.IsPrint). A string that is not valid UTF-8 is not: ranging over
// it yields utf8.RuneError, which is printable, for each bad byte.
func String(s string) bool {
	return utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
}

// FieldManager reports whether s is a field manager the API server accepts
// and records as given: at most MaxFieldManager bytes of printable UTF-8.
func FieldManager(s string) bool {
	return len(s) <= MaxFieldManager && String(s)
}

// Escape returns s with each control character (unicode.IsControl:
// newlines, tabs, terminal escapes) written as in a Go string literal
// ("\n", "\x1b"), so that s prints as one line with no terminal control;
// s itself when it has none.
func Escape(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
