// Package conditions implements the conditions of one reconciliation behind
// package context/conditioncontext: a Store, held in a context under
// ctxkey.Conditions. It is a package of its own so that the Framework can
// keep a Store in its own per-reconciliation state and answer the key itself
// (no context layer and no allocation of their own).
package conditions

import (
	"context"
	"strings"
	"sync"
	"unicode/utf8"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/operatorkit/operatorkit/internal/ctxkey"
)

// Store is the conditions of one reconciliation. The zero value is an empty
// store without a lock. Its methods are safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	set     []metav1.Condition // in the order first set
	current []metav1.Condition // the object's, as read or as last locked
	// ownCurrent is set once current is the store's own copy (before the
	// first lock modifies it): until then it is the caller's slice.
	ownCurrent bool
	lock       Locker
	// turns holds, per condition type, the turn of the Guard that runs
	// for it (a channel of one slot): Guards of one condition run one
	// after another, also when a resource calls them at once.
	turns map[string]chan struct{}
}

// Locker writes a lock condition, as conditioncontext.LockFunc describes. An
// interface rather than a func, so that the Framework's per-reconciliation
// state can be one without a closure of its own.
type Locker interface {
	// LockCondition writes c under a resourceVersion precondition, as
	// conditioncontext.LockFunc does; Guard calls it once before its task,
	// and an error (a conflict, a lock held by another reconciliation)
	// keeps the task from running.
	LockCondition(ctx context.Context, c metav1.Condition) error
}

// Init makes s the store of a reconciliation of an object whose conditions
// are current (never modified: s copies it before a lock changes it) with
// lock, which may be nil. Call it before s is shared.
func (s *Store) Init(current []metav1.Condition, lock Locker) {
	s.current, s.lock = current, lock
}

// From returns the store ctx holds, nil when it holds none.
func From(ctx context.Context) *Store {
	s, _ := ctx.Value(ctxkey.Conditions{}).(*Store)
	return s
}

// Set records c, replacing the condition of its type set before. Its
// message is made valid UTF-8 (as JSON encoding would send it), so that the
// condition compares equal to what is stored.
func (s *Store) Set(c metav1.Condition) {
	if !utf8.ValidString(c.Message) {
		c.Message = strings.ToValidUTF8(c.Message, "\uFFFD")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.set {
		if s.set[i].Type == c.Type {
			s.set[i] = c
			return
		}
	}
	s.set = append(s.set, c)
}

// Get returns the condition conditionType as last set, or else as the
// object has it (as read, or as last locked).
func (s *Store) Get(conditionType string) (metav1.Condition, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, list := range [2][]metav1.Condition{s.set, s.current} {
		for _, c := range list {
			if c.Type == conditionType {
				return c, true
			}
		}
	}
	return metav1.Condition{}, false
}

// List returns a copy of the conditions set, in the order their types were
// first set; nil when none was.
func (s *Store) List() []metav1.Condition {
	s.mu.Lock()
	defer s.mu.Unlock()
	return clone(s.set)
}

// Lock returns the store's lock, nil when it has none.
func (s *Store) Lock() Locker {
	return s.lock
}

// Turn waits until no other Guard of conditionType runs on s, or ctx
// ends (its error). On nil the caller runs its Guard and then calls done.
func (s *Store) Turn(ctx context.Context, conditionType string) (done func(), err error) {
	s.mu.Lock()
	if s.turns == nil {
		s.turns = map[string]chan struct{}{}
	}
	turn := s.turns[conditionType]
	if turn == nil {
		turn = make(chan struct{}, 1)
		s.turns[conditionType] = turn
	}
	s.mu.Unlock()
	select {
	case turn <- struct{}{}:
		return func() { <-turn }, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Locked records c as the object's current condition after a lock.
func (s *Store) Locked(c metav1.Condition) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ownCurrent {
		s.current, s.ownCurrent = clone(s.current), true
	}
	for i := range s.current {
		if s.current[i].Type == c.Type {
			s.current[i] = c
			return
		}
	}
	s.current = append(s.current, c)
}

func clone(cs []metav1.Condition) []metav1.Condition {
	if len(cs) == 0 {
		return nil
	}
	return append([]metav1.Condition(nil), cs...)
}

// Limits of metav1.Condition's fields, as the API server validates them.
const (
	MaxMessage = 32 * 1024
	MaxReason  = 1024
)

// Fit returns s as a condition field of at most n bytes holds it: valid
// UTF-8 (an invalid sequence as U+FFFD, as JSON encoding would send it, so
// that what is compared is what is stored), and when longer than n, cut at
// a character boundary and ended with "...".
func Fit(s string, n int) string {
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
