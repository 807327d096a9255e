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

func TestSame(t *testing.T) {
	type empty struct{}
	a, b := strings.NewReader("a"), strings.NewReader("a")
	e1, e2 := &empty{}, &empty{}
	tests := []struct {
		name string
		x, y any
		want bool
	}{
		{"one pointer", a, a, true},
		{"two pointers", a, b, false},
		{"zero-size values", e1, e2, false},
		{"values", 1, 1, false},
		{"nil", nil, nil, false},
	}
	for _, tt := range tests {
		if got := Same(tt.x, tt.y); got != tt.want {
			t.Errorf("%s: Same = %v, want %v", tt.name, got, tt.want)
		}
	}
}
