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
