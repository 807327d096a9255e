package proc

import (
	"os"
	"runtime"
	"strings"
	"testing"
)

func TestReadSelf(t *testing.T) {
	buf := make([]byte, 8<<20)
	for i := range buf {
		buf[i] = byte(i)
	}
	s, err := Read(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSSBytes < 8<<20 || s.PeakRSSBytes < s.RSSBytes {
		t.Fatalf("RSS %d, peak %d: want at least the 8 MiB just touched, peak >= RSS", s.RSSBytes, s.PeakRSSBytes)
	}
	if s.CPUSeconds < 0 {
		t.Fatalf("CPU seconds %v", s.CPUSeconds)
	}
	_ = buf[len(buf)-1]
}

func TestReadMissing(t *testing.T) {
	if _, err := Read(1 << 30); err == nil {
		t.Fatal("Read of a missing pid succeeded")
	}
}

func TestMachine(t *testing.T) {
	m := Machine()
	if !strings.Contains(m, "CPUs (") || !strings.Contains(m, "GiB") || !strings.Contains(m, runtime.Version()) {
		t.Errorf("Machine() = %q, want CPUs, model, memory and Go version", m)
	}
}
