package framework

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// objectState is what the Framework remembers about objects between
// reconciliations: last states of objects that vanished without its
// finalizer, UIDs whose finalizer it removed, since when each object waits
// for a successful reconciliation, and which objects are in deletion. It
// feeds the stuck-object gauges. Every entry is removed when its object is
// gone, so it is bounded by the number of live objects.
type objectState struct {
	mu         sync.Mutex
	now        func() time.Time
	tombstones map[string]any
	finalizedU map[types.UID]struct{}
	pending    map[string]time.Time // key -> first time it needed a reconciliation not yet done
	deleting   map[string]time.Time // key -> deletionTimestamp, while our finalizer is on it
	sets       map[string]string    // key -> resource set name
	setCounts  map[string]int
	failed     map[string]struct{} // keys whose last reconciliation failed
	expected   map[string]*expectation
	// running holds the keys being reconciled, each with the
	// resourceVersions the cache delivered meanwhile: a write's watch event
	// can overtake the end of the reconciliation that made it.
	running map[string][]string
	// released holds the keys that Release took away from this Framework:
	// none of them starts a reconciliation until its object leaves the
	// informer (DeleteFunc) or Reclaim gives it back.
	released map[string]struct{}
	// idle holds, per running key that Release waits for, a channel closed
	// when its reconciliation ends.
	idle map[string]chan struct{}
}

// maxSeen bounds the resourceVersions remembered per running reconciliation.
const maxSeen = 16

// expectation is a write to the reconciled object that the cache has not
// shown yet: its resourceVersion, the generation it was made at, when, and
// whether a reconciliation waits for it.
type expectation struct {
	uid        types.UID
	rv         string
	generation int64
	since      time.Time
	deferred   bool
}

func newObjectState() *objectState {
	return &objectState{
		now:        time.Now,
		tombstones: map[string]any{},
		finalizedU: map[types.UID]struct{}{},
		pending:    map[string]time.Time{},
		deleting:   map[string]time.Time{},
		sets:       map[string]string{},
		setCounts:  map[string]int{},
		failed:     map[string]struct{}{},
		expected:   map[string]*expectation{},
		running:    map[string][]string{},
		released:   map[string]struct{}{},
		idle:       map[string]chan struct{}{},
	}
}

// begin records that key is being reconciled: the resourceVersions the
// cache delivers until end are remembered. It returns false, and records
// nothing, when key was released (Framework.Release): the reconciliation
// must not start.
func (s *objectState) begin(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.released[key]; ok {
		return false
	}
	s.running[key] = nil
	return true
}

// release marks key released and returns nil when no reconciliation of key
// runs, else a channel closed when the one running ends.
func (s *objectState) release(key string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.released[key] = struct{}{}
	if _, ok := s.running[key]; !ok {
		return nil
	}
	ch, ok := s.idle[key]
	if !ok {
		ch = make(chan struct{})
		s.idle[key] = ch
	}
	return ch
}

// wakeIdle tells the Release waiting for key, if any, that no
// reconciliation of key runs. s.mu must be held.
func (s *objectState) wakeIdle(key string) {
	if ch, ok := s.idle[key]; ok {
		close(ch)
		delete(s.idle, key)
	}
}

// reclaim takes back release and reports whether key was released.
func (s *objectState) reclaim(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.released[key]
	delete(s.released, key)
	return ok
}

// isReleased reports whether key is released.
func (s *objectState) isReleased(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.released[key]
	return ok
}

// end records the end of key's reconciliation, whose last write to the
// object (uid) left it at resourceVersion rv (written is false when it
// wrote nothing) at generation: the write is expected in the cache before
// the next reconciliation, unless the cache delivered it already.
func (s *objectState) end(key string, uid types.UID, rv string, generation int64, written bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	seen := s.running[key]
	delete(s.running, key)
	s.wakeIdle(key)
	if !written || slices.Contains(seen, rv) {
		return
	}
	s.expected[key] = &expectation{uid: uid, rv: rv, generation: generation, since: s.now()}
}

func (s *objectState) setTombstone(key string, obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tombstones[key] = obj
	if _, ok := s.pending[key]; !ok {
		s.pending[key] = s.now()
	}
}

func (s *objectState) tombstone(key string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	obj, ok := s.tombstones[key]
	return obj, ok
}

func (s *objectState) markFinalized(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.finalizedU[uid] = struct{}{}
}

// unmarkFinalized takes back markFinalized after a failed finalizer patch.
func (s *objectState) unmarkFinalized(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.finalizedU, uid)
}

// wasFinalized reports whether the Framework removed its finalizer from the
// object with uid: a cache that still shows the finalizer is stale.
func (s *objectState) wasFinalized(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.finalizedU[uid]
	return ok
}

// finalized reports whether the Framework removed its finalizer from the
// object with uid, and forgets it: the object is gone now.
func (s *objectState) finalized(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.finalizedU[uid]
	delete(s.finalizedU, uid)
	return ok
}

func (s *objectState) markPending(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.pending[key]; !ok {
		s.pending[key] = s.now()
	}
}

func (s *objectState) pendingKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.pending))
	for k := range s.pending {
		keys = append(keys, k)
	}
	return keys
}

func (s *objectState) done(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, key)
}

func (s *objectState) setDeleting(key string, since time.Time, deleting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleting {
		s.deleting[key] = since
	} else {
		delete(s.deleting, key)
	}
}

func (s *objectState) setResourceSet(key, set string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.sets[key]
	if ok && old == set {
		return
	}
	if ok {
		s.setCounts[old]--
	}
	s.sets[key] = set
	s.setCounts[set]++
}

// setFailed records that key's last reconciliation failed.
func (s *objectState) setFailed(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failed[key] = struct{}{}
}

// recovered records that key's last reconciliation succeeded and reports
// whether the one before had failed.
func (s *objectState) recovered(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.failed[key]
	delete(s.failed, key)
	return ok
}

// stale reports whether the cached object (uid, rv, generation) is older
// than the last write expected for key, and how long to wait at most. The
// expectation ends when the cache shows the written resourceVersion, a newer
// generation, another object (uid), or after ttl.
func (s *objectState) stale(key string, uid types.UID, rv string, generation int64, ttl time.Duration) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.expected[key]
	if !ok {
		return false, 0
	}
	age := s.now().Sub(e.since)
	if e.uid != uid || e.rv == rv || generation > e.generation || age >= ttl {
		delete(s.expected, key)
		return false, 0
	}
	e.deferred = true
	return true, ttl - age
}

// observed is called with every resourceVersion the cache delivers for key.
// It ends the expectation the version fulfils and reports whether a
// reconciliation was deferred for it.
func (s *objectState) observed(key, rv string) (deferred bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if seen, ok := s.running[key]; ok {
		if len(seen) == maxSeen {
			seen = append(seen[:0], seen[1:]...)
		}
		s.running[key] = append(seen, rv)
	}
	e, ok := s.expected[key]
	if !ok || e.rv != rv {
		return false
	}
	delete(s.expected, key)
	return e.deferred
}

// forget drops everything about key: the object is gone.
func (s *objectState) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.tombstones, key)
	delete(s.running, key)
	delete(s.released, key)
	s.wakeIdle(key)
	delete(s.pending, key)
	delete(s.deleting, key)
	delete(s.failed, key)
	delete(s.expected, key)
	if set, ok := s.sets[key]; ok {
		s.setCounts[set]--
		delete(s.sets, key)
	}
}

// stats returns the stuck-object figures: how many objects are in deletion,
// the age of the oldest deletion and of the oldest pending reconciliation,
// and the number of objects per resource set.
func (s *objectState) stats() (inDeletion int, oldestDeletion, oldestPending time.Duration, perSet map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, t := range s.deleting {
		if d := now.Sub(t); d > oldestDeletion {
			oldestDeletion = d
		}
	}
	for _, t := range s.pending {
		if d := now.Sub(t); d > oldestPending {
			oldestPending = d
		}
	}
	perSet = make(map[string]int, len(s.setCounts))
	for k, v := range s.setCounts {
		perSet[k] = v
	}
	return len(s.deleting), oldestDeletion, oldestPending, perSet
}
