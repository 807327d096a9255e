package framework

import (
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"

	"github.com/operatorkit/operatorkit/router"
)

// objectState is what the Framework remembers about objects between
// reconciliations: last states of objects that vanished without its
// finalizer, the objects (key and UID) whose finalizer it removed, since
// when each object waits for a successful reconciliation, which objects
// are in deletion, and until when an object waits for the wait its last
// failure asked for (retry.After), which neither a resync nor an earlier
// requeue cuts short. It feeds the stuck-object gauges. Every entry is
// removed when its object is gone (forget), so it is bounded by the number
// of live objects.
//
// What it keeps per key is one objectEntry in one map: a reconciliation asks
// about its key several times (begin, stale, resource set, end, done), and
// one entry is one look-up of memory that is cold in a resync of many
// objects, where a map per fact was one each.
type objectState struct {
	mu      sync.Mutex
	now     func() time.Time
	objects map[string]*objectEntry
	// finalizedUID maps the key of an object whose finalizer the Framework
	// removed to its UID, until its delete event or forget. Keyed by the
	// key, not the UID, so that forget drops it with the rest: a delete
	// event that came before the mark (the object vanished during its
	// delete chain, and the finalizer patch answered 404) left a tombstone,
	// whose reconciliation forgets the key.
	finalizedUID map[string]types.UID
	setCounts    map[string]int // resource set name -> objects it handled last
}

// objectEntry is what objectState keeps about one key. An entry whose
// fields are all zero is removed (prune).
//
// It is 80 bytes, in the allocator's size class of 80
// (TestObjectEntrySize): every object the Framework reconciled keeps one
// (set), at rest too. What only a deleted, deleting or released object
// needs is in rare, made when first needed and dropped when it holds
// nothing again.
type objectEntry struct {
	// pending is the first time the object needed a reconciliation not
	// done yet; zero when none is pending.
	pending time.Time
	// set is the resource set that handled it last, nil when none did:
	// the set itself, not its name, which is optional.
	set *router.ResourceSet
	// expected is a write to the object that the cache has not shown yet.
	expected *expectation
	// seen holds, while it is being reconciled (running), the
	// resourceVersions the cache delivered meanwhile: a write's watch
	// event can overtake the end of the reconciliation that made it.
	seen []string
	// rare holds the tombstone, the deletionTimestamp and the Release
	// channel; nil when all three are zero.
	rare *objectRare

	// inDeletion is set while our finalizer is on the object being
	// deleted (rare.deleting).
	inDeletion bool
	// failed is set when its last reconciliation failed.
	failed bool
	// running is set while it is being reconciled.
	running bool
	// released is set when Release took the key away from this
	// Framework: no reconciliation of it starts until its object leaves
	// the informer (DeleteFunc) or Reclaim gives it back.
	released bool
	// resynced is set when a resync of the object came while it was
	// being reconciled (running): end decides whether it runs again.
	resynced bool
	// woken is set when an event woke the object (markPending, a delete)
	// while it was being reconciled (running): its next reconciliation
	// runs at once, and waitFor records no wait for this one.
	woken bool
	// noFields is set when the Framework knows that its field manager
	// owns no status field of the object but the conditions and
	// observedGeneration: the managedFields of the API server's last
	// answer about the object to this process (its status apply, or a
	// read) said so, and no apply of a field was sent since. Its status
	// write then needs no read of managedFields to tell which fields to
	// carry over (statusRun.finishLocked). Unset, it is not known: in a
	// new process, or once the object was released to another owner.
	// Alone it keeps no entry (empty): dropped, it is read again.
	noFields bool
}

// objectRare is the part of an objectEntry that few objects need.
type objectRare struct {
	// tombstone is the last state of an object that vanished without the
	// Framework's finalizer, for its delete chain.
	tombstone any
	// deleting is the object's deletionTimestamp while our finalizer is on
	// it (objectEntry.inDeletion).
	deleting time.Time
	// idle, while a Release waits for the running reconciliation, is
	// closed when it ends.
	idle chan struct{}
	// notBefore is the end of the wait the object's last failure asked
	// for (retry.DelayOf: retry.After, a Retry-After), which neither a
	// resync (Framework.UpdateFunc) nor a requeue the Framework asked for
	// earlier (begin) cuts short; zero once an event wakes the object
	// (markPending, setTombstone) or its next reconciliation begins after
	// the wait.
	notBefore time.Time
}

// rareOf returns e's rare part, made when it has none.
func (e *objectEntry) rareOf() *objectRare {
	if e.rare == nil {
		e.rare = &objectRare{}
	}
	return e.rare
}

// tidyRare drops e's rare part when it holds nothing (and e is not in
// deletion, whose deletionTimestamp it holds, even a zero one).
func (e *objectEntry) tidyRare() {
	if r := e.rare; r != nil && r.tombstone == nil && r.deleting.IsZero() && r.idle == nil && r.notBefore.IsZero() && !e.inDeletion {
		e.rare = nil
	}
}

// tombstone returns e's tombstone, nil when it has none.
func (e *objectEntry) tombstone() any {
	if e.rare == nil {
		return nil
	}
	return e.rare.tombstone
}

func (e *objectEntry) empty() bool {
	return e.rare == nil && e.pending.IsZero() && !e.inDeletion && e.set == nil && !e.failed &&
		e.expected == nil && !e.running && !e.released
}

// maxSeen bounds the resourceVersions remembered per running reconciliation.
const maxSeen = 16

// expectation is a write to the reconciled object that the cache has not
// shown yet (or, moved, a write someone else made, which made one of the
// operator's conflict): its resourceVersion, the generation it was made
// at, when, and whether a reconciliation waits for it.
type expectation struct {
	uid        types.UID
	rv         string
	generation int64
	since      time.Time
	deferred   bool
	// observed is set when the cache delivered the write while a
	// reconciliation ran, which may have read the object before it: its
	// stale check ends the expectation and has it read the object again.
	observed bool
	// moved marks the expectation of a conflict (awaitChange): rv is the
	// version the reconciliation read, not one it wrote, and any other
	// version fulfils it; the winner's version is not known.
	moved bool
}

// fulfilledBy reports whether the cache showing version rv ends x.
func (x *expectation) fulfilledBy(rv string) bool {
	if x.moved {
		return rv != x.rv
	}
	return shows(rv, x.rv)
}

func newObjectState() *objectState {
	return &objectState{
		now:          time.Now,
		objects:      map[string]*objectEntry{},
		finalizedUID: map[string]types.UID{},
		setCounts:    map[string]int{},
	}
}

// entry returns key's entry, made when there is none. s.mu must be held.
func (s *objectState) entry(key string) *objectEntry {
	e := s.objects[key]
	if e == nil {
		e = &objectEntry{}
		s.objects[key] = e
	}
	return e
}

// prune removes key's entry e when it holds nothing. s.mu must be held.
func (s *objectState) prune(key string, e *objectEntry) {
	if e.empty() {
		delete(s.objects, key)
	}
}

// begin records that key is being reconciled: the resourceVersions the
// cache delivers until end are remembered. It returns false, and records
// nothing, when key was released (Framework.Release), or during the wait
// its last failure asked for (waitFor) when nothing woke it since (the
// key came back from a requeue asked for before that wait, which the
// work queue does not move later; waiting tells the rest): the
// reconciliation must not start.
func (s *objectState) begin(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	if e.rare != nil && !e.rare.notBefore.IsZero() {
		if !e.released && s.now().Before(e.rare.notBefore) {
			return false
		}
		e.rare.notBefore = time.Time{}
		e.tidyRare()
	}
	if e.released {
		return false
	}
	e.running, e.seen, e.resynced, e.woken = true, nil, false, false
	return true
}

// waiting reports, for a key begin refused, whether it was refused for
// the wait its last failure asked for rather than for a Release, and how
// much of that wait is left (0 when an event ended it since).
func (s *objectState) waiting(key string) (time.Duration, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	if e == nil || e.released {
		return 0, false
	}
	if e.rare == nil || e.rare.notBefore.IsZero() {
		return 0, true
	}
	return max(0, e.rare.notBefore.Sub(s.now())), true
}

// woke records that an event woke key (s.mu held): the wait its last
// failure asked for ends, and a failure of the reconciliation that runs
// records none (waitFor), so that the object is reconciled at once.
func (e *objectEntry) woke() {
	if e.rare != nil && !e.rare.notBefore.IsZero() {
		e.rare.notBefore = time.Time{}
		e.tidyRare()
	}
	if e.running {
		e.woken = true
	}
}

// release marks key released and returns nil when no reconciliation of key
// runs, else a channel closed when the one running ends.
func (s *objectState) release(key string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	// Its next owner may apply status fields under the same field
	// manager.
	e.released, e.noFields = true, false
	if !e.running {
		return nil
	}
	r := e.rareOf()
	if r.idle == nil {
		r.idle = make(chan struct{})
	}
	return r.idle
}

// wakeIdle tells the Release waiting for e's key, if any, that no
// reconciliation of it runs. s.mu must be held.
func wakeIdle(e *objectEntry) {
	if e.rare != nil && e.rare.idle != nil {
		close(e.rare.idle)
		e.rare.idle = nil
		e.tidyRare()
	}
}

// ownsNoFields reports whether the Framework knows that its field manager
// owns no status field of key's object but the conditions and
// observedGeneration (objectEntry.noFields).
func (s *objectState) ownsNoFields(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	return e != nil && e.noFields
}

// setOwnsNoFields records whether the Framework knows that its field
// manager owns no status field of key's object but the conditions and
// observedGeneration. Nothing is recorded for a key without an entry (its
// object is gone), nor for one released.
func (s *objectState) setOwnsNoFields(key string, none bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil && !e.released {
		e.noFields = none
	}
}

// waitFor records that key's reconciliation, which runs, fails with an
// error that asked for a wait of d (retry.DelayOf): until d has passed, or
// an event wakes key, neither a resync (resync) nor a requeue (begin)
// runs it. Nothing is recorded for a key that is not running, is
// released, or that an event woke while it ran (woke).
func (s *objectState) waitFor(key string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil && e.running && !e.released && !e.woken {
		e.rareOf().notBefore = s.now().Add(d)
	}
}

// resync reports whether a resync of key (an update event at the same
// resourceVersion) enqueues it now: not while the wait its last failure
// asked for has not passed (waitFor), and not while it is being
// reconciled: end decides then, after its outcome. When it does, key is
// marked pending, as markPending does: the caller adds it to the queue
// without Enqueue, in one look-up of the state.
func (s *objectState) resync(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	switch {
	case e.running:
		e.resynced = true
		return false
	case e.rare != nil && s.now().Before(e.rare.notBefore):
		return false
	}
	if e.pending.IsZero() {
		e.pending = s.now()
	}
	return true
}

// reclaim takes back release and reports whether key was released.
func (s *objectState) reclaim(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	if e == nil {
		return false
	}
	ok := e.released
	e.released = false
	s.prune(key, e)
	return ok
}

// isReleased reports whether key is released.
func (s *objectState) isReleased(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	return e != nil && e.released
}

// end records the end of key's reconciliation, whose last write to the
// object (uid) left it at resourceVersion rv (written is false when it
// wrote nothing) at generation: the write is expected in the cache before
// the next reconciliation, unless the cache delivered it (or a newer
// version, see shows) already. It reports whether key must be enqueued for
// a resync that came while it ran: not when the reconciliation asked for a
// wait (waitFor) that a resync does not cut short.
func (s *objectState) end(key string, uid types.UID, rv string, generation int64, written bool) (resync bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	if e == nil {
		// Forgotten while it ran (its delete event came before the
		// answer to the finalizer patch): the object is gone, no write of
		// it is expected.
		return false
	}
	resync = e.resynced && (e.rare == nil || !s.now().Before(e.rare.notBefore))
	seen := e.seen
	e.running, e.seen, e.resynced, e.woken = false, nil, false, false
	wakeIdle(e)
	if e.expected != nil && e.expected.observed {
		e.expected = nil // the cache shows it
	}
	if written && !slices.ContainsFunc(seen, func(v string) bool { return shows(v, rv) }) {
		e.expected = &expectation{uid: uid, rv: rv, generation: generation, since: s.now()}
	}
	s.prune(key, e)
	return resync
}

// awaitChange records that key's reconciliation of the object (uid) at
// resourceVersion rv lost a write to a newer version the cache does not
// show yet: the next reconciliation waits, as for the operator's own write
// (stale), until the cache shows another version, so that it does not
// send again a write that must conflict. An expectation of the operator's
// own write, set by end, is kept: the cache showing that write moves on
// from rv as well.
func (s *objectState) awaitChange(key string, uid types.UID, rv string, generation int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if rv == "" {
		return
	}
	if e := s.entry(key); e.expected == nil && !e.released {
		e.expected = &expectation{uid: uid, rv: rv, generation: generation, since: s.now(), moved: true}
	}
}

func (s *objectState) setTombstone(key string, obj any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	e.woke()
	e.rareOf().tombstone = obj
	if e.pending.IsZero() {
		e.pending = s.now()
	}
}

// dropTombstone forgets key's tombstone: its object is back.
func (s *objectState) dropTombstone(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil && e.tombstone() != nil {
		e.rare.tombstone = nil
		e.tidyRare()
		s.prune(key, e)
	}
}

func (s *objectState) tombstone(key string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil {
		t := e.tombstone()
		return t, t != nil
	}
	return nil, false
}

// markFinalized records that the Framework removes its finalizer from the
// object key with uid, which is being reconciled. Nothing is recorded when
// key was forgotten meanwhile: its delete event came already, and nothing
// would consume the mark.
func (s *objectState) markFinalized(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.objects[key] != nil {
		s.finalizedUID[key] = uid
	}
}

// unmarkFinalized takes back markFinalized after a failed finalizer patch.
func (s *objectState) unmarkFinalized(key string, uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.finalizedUID[key] == uid {
		delete(s.finalizedUID, key)
	}
}

// wasFinalized reports whether the Framework removed its finalizer from the
// object key with uid: a cache that still shows the finalizer is stale.
func (s *objectState) wasFinalized(key string, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.finalizedUID[key]
	return ok && u == uid
}

// finalized reports whether the Framework removed its finalizer from the
// object key with uid, and forgets the mark: the object is gone now.
func (s *objectState) finalized(key string, uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.finalizedUID[key]
	if !ok || u != uid {
		return false
	}
	delete(s.finalizedUID, key)
	return true
}

// markPending records that an event wakes key (Enqueue): it is pending
// from now, unless it was already, and the wait its last failure asked
// for ends (woke).
func (s *objectState) markPending(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	if e.pending.IsZero() {
		e.pending = s.now()
	}
	e.woke()
}

// pendingKeys returns the keys pending before Boot, which pend from now
// on: nothing could reconcile them before.
func (s *objectState) pendingKeys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	now := s.now()
	for k, e := range s.objects {
		if !e.pending.IsZero() {
			e.pending = now
			keys = append(keys, k)
		}
	}
	return keys
}

func (s *objectState) done(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil && !e.pending.IsZero() {
		e.pending = time.Time{}
		s.prune(key, e)
	}
}

func (s *objectState) setDeleting(key string, since time.Time, deleting bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if deleting {
		e := s.entry(key)
		e.rareOf().deleting, e.inDeletion = since, true
		return
	}
	if e := s.objects[key]; e != nil && e.inDeletion {
		e.rareOf().deleting, e.inDeletion = time.Time{}, false
		e.tidyRare()
		s.prune(key, e)
	}
}

func (s *objectState) setResourceSet(key string, set *router.ResourceSet) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.entry(key)
	if e.set == set {
		return
	}
	if e.set != nil {
		s.setCounts[e.set.Name()]--
	}
	e.set = set
	s.setCounts[set.Name()]++
}

// resourceSet returns the resource set that last handled key, nil when
// none did.
func (s *objectState) resourceSet(key string) *router.ResourceSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil {
		return e.set
	}
	return nil
}

// setFailed records that key's last reconciliation failed.
func (s *objectState) setFailed(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entry(key).failed = true
}

// recovered records that key's last reconciliation succeeded and reports
// whether the one before had failed.
func (s *objectState) recovered(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	if e == nil || !e.failed {
		return false
	}
	e.failed = false
	s.prune(key, e)
	return true
}

// stale reports whether the cached object (uid, rv, generation) is older
// than the last write expected for key, and how long to wait at most. The
// expectation ends when the cache shows the written resourceVersion or a
// newer one (shows), a newer generation, another object (uid), or after ttl.
func (s *objectState) stale(key string, uid types.UID, rv string, generation int64, ttl time.Duration) (bool, time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	if e == nil || e.expected == nil {
		return false, 0
	}
	x := e.expected
	age := s.now().Sub(x.since)
	if x.uid != uid || x.fulfilledBy(rv) || generation > x.generation || age >= ttl {
		e.expected = nil
		s.prune(key, e)
		return false, 0
	}
	if x.observed {
		// The write's event came after this reconciliation read the
		// object, and was not taken for a change: read it again, now.
		e.expected = nil
		return true, 0
	}
	x.deferred = true
	return true, ttl - age
}

// observed is called with every resourceVersion the cache delivers for key.
// It ends the expectation the version fulfils (shows) (while key is reconciled,
// marks it for that reconciliation's stale check, or its end) and reports
// whether a reconciliation was deferred for it.
func (s *objectState) observed(key, rv string) (deferred bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.objects[key]
	if e == nil {
		return false
	}
	if e.running {
		if len(e.seen) == maxSeen {
			e.seen = append(e.seen[:0], e.seen[1:]...)
		}
		e.seen = append(e.seen, rv)
	}
	x := e.expected
	if x == nil || !x.fulfilledBy(rv) {
		return false
	}
	if e.running {
		// The running reconciliation may have read the object before this
		// version without having checked it yet (stale): the check ends
		// the expectation, or end does.
		x.observed = true
		return x.deferred
	}
	e.expected = nil
	s.prune(key, e)
	return x.deferred
}

// forget drops everything about key: the object is gone, and its delete
// event came (DeleteFunc, or the reconciliation of the tombstone it left).
func (s *objectState) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.finalizedUID, key)
	s.forgetEntry(key)
}

// forgetUncached is forget for a key the cache no longer has, of which no
// tombstone was kept: everything is dropped but the mark of a removed
// finalizer (markFinalized), which the object's delete event consumes; the
// informer's cache can drop the object before its handler gets that event.
// A tombstone that event left since it was looked for is kept, with the
// rest of the entry: DeleteFunc queued the key for it, and its
// reconciliation forgets the key.
func (s *objectState) forgetUncached(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.objects[key]; e != nil && e.tombstone() != nil {
		return
	}
	s.forgetEntry(key)
}

// forgetEntry drops key's entry. s.mu must be held.
func (s *objectState) forgetEntry(key string) {
	e := s.objects[key]
	if e == nil {
		return
	}
	wakeIdle(e)
	if e.set != nil {
		s.setCounts[e.set.Name()]--
	}
	delete(s.objects, key)
}

// stats returns the stuck-object figures: how many objects are in deletion,
// the age of the oldest deletion and of the oldest pending reconciliation,
// and the number of objects per resource set.
func (s *objectState) stats() (inDeletion int, oldestDeletion, oldestPending time.Duration, perSet map[string]int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	for _, e := range s.objects {
		if e.inDeletion {
			inDeletion++
			if d := now.Sub(e.rare.deleting); d > oldestDeletion {
				oldestDeletion = d
			}
		}
		if !e.pending.IsZero() {
			if d := now.Sub(e.pending); d > oldestPending {
				oldestPending = d
			}
		}
	}
	perSet = make(map[string]int, len(s.setCounts))
	for k, v := range s.setCounts {
		perSet[k] = v
	}
	return inDeletion, oldestDeletion, oldestPending, perSet
}

// shows reports whether an object the cache holds at resourceVersion cached
// shows a write that returned resourceVersion written: the same version, or
// a newer one. A relist after a restarted watch can skip the written
// version, the cache jumping to a newer one. Versions are compared as
// integers, as client-go's MutationCache does (etcd's are); when either is
// not one (an aggregated API server's can be anything), only the written
// version itself shows the write.
func shows(cached, written string) bool {
	if cached == written {
		return true
	}
	c, err := resourceversion.CompareResourceVersion(cached, written)
	return err == nil && c > 0
}
