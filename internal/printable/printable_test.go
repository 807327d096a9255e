package printable

import (
	"strings"
	"testing"
)

// TestFieldManager: printable UTF-8 of at most 128 bytes is a field
// manager; control characters, invalid UTF-8 (whose bytes range as the
// printable utf8.RuneError) and 129 bytes are not.
func TestFieldManager(t *testing.T) {
	for _, tt := range []struct {
		s    string
		want bool
	}{
		{"operatorkit", true},
		{"büro-operator", true},
		{strings.Repeat("a", MaxFieldManager), true},
		{strings.Repeat("a", MaxFieldManager+1), false},
		{"tab\there", false},
		{"bad\xffbyte", false},
		{"\xc3", false},
	} {
		if got := FieldManager(tt.s); got != tt.want {
			t.Errorf("FieldManager(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

// TestEscape: control characters are written as in a Go string literal;
// a string without one is returned as it is.
func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"plain é 世":     "plain é 世",
		"a\nb\tc":       `a\nb\tc`,
		"\x1b[31mred":   `\x1b[31mred`,
		"nul\x00\u0085": `nul\x00\u0085`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}
