// Package printable tells the strings that a Kubernetes API server and
// client-go take as names of a writer: field managers, user agents and
// label-free metric values.
package printable

import (
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
