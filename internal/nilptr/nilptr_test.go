package nilptr

import (
	"io"
	"strings"
	"testing"
)

func TestIs(t *testing.T) {
	var r io.Reader
	var sr *strings.Reader
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"nil", nil, true},
		{"nil interface", r, true},
		{"nil pointer in an interface", io.Reader(sr), true},
		{"pointer", strings.NewReader(""), false},
		{"value", 0, false},
		{"nil map is a value", map[string]int(nil), false},
	}
	for _, tt := range tests {
		if got := Is(tt.v); got != tt.want {
			t.Errorf("%s: Is() = %v, want %v", tt.name, got, tt.want)
		}
	}
}
