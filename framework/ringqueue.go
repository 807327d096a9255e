package framework

// ringQueue is the FIFO of keys inside the Framework's work queue
// (client-go's workqueue.Queue): a ring buffer, where client-go's default
// is a slice that each Pop shortens from the front, so that Push allocates
// a new array again and again in a steady stream of keys (about 30 bytes
// per key). A ring grows to the next power of two above the most keys it
// held and keeps that room while it holds any key; once emptied, a ring
// with room for more than maxIdleRing keys gives the room back, so that a
// burst of many keys does not keep its memory for good.
// Like client-go's, it is used under the work queue's lock only.
type ringQueue struct {
	buf  []string // its length is 0 or a power of two
	head int      // index of the first key
	n    int      // keys held
}

// maxIdleRing is the most keys an empty ringQueue keeps room for (16 KiB
// of string headers).
const maxIdleRing = 1024

// Touch is called when a queued key is added again: nothing to do, it
// keeps its place.
func (q *ringQueue) Touch(string) {}

// Push adds key at the end.
func (q *ringQueue) Push(key string) {
	if q.n == len(q.buf) {
		grown := make([]string, max(16, 2*len(q.buf)))
		// The keys in order, from head: up to the buffer's end, then
		// those that wrapped around to its start.
		c := copy(grown, q.buf[q.head:])
		copy(grown[c:], q.buf[:q.head])
		q.buf, q.head = grown, 0
	}
	q.buf[(q.head+q.n)&(len(q.buf)-1)] = key
	q.n++
}

// Len returns the number of keys held.
func (q *ringQueue) Len() int { return q.n }

// Pop removes and returns the first key. The work queue calls it only
// when Len is not 0.
func (q *ringQueue) Pop() string {
	key := q.buf[q.head]
	q.buf[q.head] = "" // the key's string is not kept alive by the ring
	q.head = (q.head + 1) & (len(q.buf) - 1)
	q.n--
	if q.n == 0 {
		q.head = 0
		if len(q.buf) > maxIdleRing {
			q.buf = nil
		}
	}
	return key
}
