package trace

import "testing"

// TestDetachLeavesBufferZero: a step buffer goes back to the pool with no
// step left in it, whether the trace used part of it, all of it, or
// outgrew it, so that no error string outlives its trace and the next
// trace appends into zeroed room.
func TestDetachLeavesBufferZero(t *testing.T) {
	for _, n := range []int{0, 3, 4, 6} { // room for 4: part, all, outgrown
		for _, keep := range []bool{false, true} {
			s := make([]Step, 0, 4)
			buf := &s
			tr := &Trace{Steps: s, buf: buf}
			for range n {
				tr.Steps = append(tr.Steps, Step{Resource: "r", Step: "s", Error: "failed"})
			}
			tr.detach(keep, nil)
			for i, st := range (*buf)[:cap(*buf)] {
				if st != (Step{}) {
					t.Errorf("%d steps, keep %v: buffer step %d = %+v after detach, want zero", n, keep, i, st)
				}
			}
			if keep && len(tr.Steps) != n {
				t.Errorf("%d steps, keep %v: the trace kept %d steps", n, keep, len(tr.Steps))
			}
		}
	}
}
