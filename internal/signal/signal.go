// Package signal implements the reconciliation signals behind the
// context/<x>context packages: one-way flags and a shortest-wins duration,
// stored in a context.Context under keys only this module can build.
//
// Each signal costs one allocation when made alone (WithFlag, WithDuration),
// and WithMissing adds all signals a context lacks in a single allocation and
// a single context layer, which keeps framework.ProcessUpdate cheap and its
// signal look-ups short.
package signal

import (
	"context"
	"sync/atomic"
	"time"
)

// Key identifies one signal. Its values are the context keys of the signals;
// code outside this module cannot build them, so they never collide.
type Key uint8

// The signals, one per context/<x>context package.
const (
	ReconciliationCanceled Key = iota
	ResourceCanceled
	FinalizersKept
	UpdateAllowed
	DeletionAllowed
	UpdateNecessary
	// The keys of the signals that are not flags come last: Signals
	// holds a Flag for each key below Requeue only.
	Requeue         // a *Duration
	ResourceVersion // a *Version; all others are a *Flag
	numKeys

	// allKeys is the key under which a context that holds every signal
	// WithMissing adds (a Signals, or a layer owning all of them) answers
	// (with its *Signals), so that WithMissing finds nothing missing with
	// one look-up instead of one per signal.
	allKeys = numKeys
)

// Flag is a one-way boolean: once Set it stays set. The zero value is unset.
// Its methods are safe for concurrent use and do nothing on a nil *Flag.
type Flag struct{ v atomic.Bool }

// Set sets f. It is a no-op on a nil f.
func (f *Flag) Set() {
	if f != nil {
		f.v.Store(true)
	}
}

// IsSet reports whether f was set; false for a nil f.
func (f *Flag) IsSet() bool { return f != nil && f.v.Load() }

// Duration keeps the shortest duration it was given. The zero value holds
// none. Its methods are safe for concurrent use and do nothing on a nil
// *Duration.
type Duration struct {
	v atomic.Int64 // ^d of the shortest d so far (d >= 0, so never 0); 0 when none
}

// SetMin records d unless a shorter one is already held. A negative d counts
// as 0. It is a no-op on a nil dur.
func (dur *Duration) SetMin(d time.Duration) {
	if dur == nil {
		return
	}
	if d < 0 {
		d = 0
	}
	enc := ^int64(d) // a shorter d gives a greater enc
	for {
		old := dur.v.Load()
		if old != 0 && old >= enc {
			return
		}
		if dur.v.CompareAndSwap(old, enc) {
			return
		}
	}
}

// Get returns the shortest duration recorded and true, or 0 and false when
// none was (or dur is nil).
func (dur *Duration) Get() (time.Duration, bool) {
	if dur == nil {
		return 0, false
	}
	enc := dur.v.Load()
	if enc == 0 {
		return 0, false
	}
	return time.Duration(^enc), true
}

// Version holds the resourceVersion of the reconciled object that the
// reconciliation's own writes produced (see resourceversioncontext). The zero
// value holds none. Its methods are safe for concurrent use and do nothing on
// a nil *Version.
//
// It is one pointer (8 bytes, where a mutex and a string took 24), so that
// the context of every reconciliation, which holds one (Signals), is
// smaller; a Set, once per write of the object, allocates the string's
// header instead.
type Version struct {
	rv atomic.Pointer[string]
}

// Set records rv; an empty rv is ignored. It is a no-op on a nil v.
func (v *Version) Set(rv string) {
	if v == nil || rv == "" {
		return
	}
	v.rv.Store(&rv)
}

// Get returns the last resourceVersion recorded and true, or "" and false
// when none was (or v is nil).
func (v *Version) Get() (string, bool) {
	if v == nil {
		return "", false
	}
	if rv := v.rv.Load(); rv != nil {
		return *rv, true
	}
	return "", false
}

// VersionFrom returns the resourceVersion signal stored in ctx, or nil when
// ctx has none.
func VersionFrom(ctx context.Context) *Version {
	v, _ := ctx.Value(ResourceVersion).(*Version)
	return v
}

// WithVersion returns a child of ctx holding a new, empty resourceVersion
// signal.
func WithVersion(ctx context.Context) context.Context {
	return &versionCtx{Context: ctx}
}

// FlagFrom returns the flag stored in ctx under key, or nil when ctx has none.
func FlagFrom(ctx context.Context, key Key) *Flag {
	f, _ := ctx.Value(key).(*Flag)
	return f
}

// DurationFrom returns the requeue duration stored in ctx, or nil when ctx has
// none.
func DurationFrom(ctx context.Context) *Duration {
	d, _ := ctx.Value(Requeue).(*Duration)
	return d
}

// WithFlag returns a child of ctx holding a new, unset flag under key. It
// shadows a flag ctx may already hold under key.
func WithFlag(ctx context.Context, key Key) context.Context {
	return &flagCtx{Context: ctx, key: key}
}

// WithDuration returns a child of ctx holding a new, empty requeue duration.
func WithDuration(ctx context.Context) context.Context {
	return &durationCtx{Context: ctx}
}

// WithMissing returns a child of ctx holding a new signal for every key except
// ResourceCanceled and ResourceVersion that ctx does not hold yet, all in one
// allocation; signals ctx already holds stay visible. It returns ctx itself
// when nothing is missing. ResourceCanceled is left out because it must be
// fresh for every resource (see WithFlag), ResourceVersion because only the
// Framework reads it.
func WithMissing(ctx context.Context) context.Context {
	if ctx.Value(allKeys) != nil {
		return ctx
	}
	var owns [numKeys]bool
	missing := false
	for k := Key(0); k < numKeys; k++ {
		if k != ResourceCanceled && k != ResourceVersion && ctx.Value(k) == nil {
			owns[k] = true
			missing = true
		}
	}
	if !missing {
		return ctx
	}
	return &setCtx{Context: ctx, owns: owns}
}

// WithFresh returns a child of ctx holding a new signal for every key except
// ResourceCanceled, in one allocation and one context layer: the signals of
// one reconciliation. They shadow any signals ctx holds, so nothing set in an
// earlier reconciliation, or by the caller, shows through.
func WithFresh(ctx context.Context) context.Context {
	c := &setCtx{Context: ctx}
	for k := Key(0); k < numKeys; k++ {
		c.owns[k] = k != ResourceCanceled
	}
	return c
}

// flagCtx is a context layer holding one flag; being the layer and the flag in
// one struct makes it a single allocation. flagCtx, durationCtx and
// versionCtx are deliberately not one generic type: that measured 6 % slower
// on BenchmarkProcessUpdate.
type flagCtx struct {
	context.Context
	key  Key
	flag Flag
}

func (c *flagCtx) Value(k any) any {
	if key, ok := k.(Key); ok && key == c.key {
		return &c.flag
	}
	return c.Context.Value(k)
}

type durationCtx struct {
	context.Context
	dur Duration
}

func (c *durationCtx) Value(k any) any {
	if key, ok := k.(Key); ok && key == Requeue {
		return &c.dur
	}
	return c.Context.Value(k)
}

type versionCtx struct {
	context.Context
	v Version
}

func (c *versionCtx) Value(k any) any {
	if key, ok := k.(Key); ok && key == ResourceVersion {
		return &c.v
	}
	return c.Context.Value(k)
}

// Signals holds a new signal for every key except ResourceCanceled: the
// signals of one reconciliation, as WithFresh makes them, in a value that a
// context type of the caller's own can hold and answer for (see Lookup), so
// that they cost neither an allocation nor a context layer of their own. The
// zero value is ready; it must not be copied after first use.
type Signals struct {
	flags [Requeue]Flag // indexed by Key; the ResourceCanceled slot is unused
	dur   Duration
	v     Version
}

// Lookup returns the signal s holds under key (a *Flag, *Duration or
// *Version, as FlagFrom, DurationFrom and VersionFrom expect), s itself for
// the key under which WithMissing asks for all of them, or nil for
// ResourceCanceled and keys out of range. A context's Value returns it for
// a Key it answers for.
func (s *Signals) Lookup(key Key) any {
	switch {
	case key == allKeys:
		return s
	case key >= numKeys || key == ResourceCanceled:
		return nil
	case key == Requeue:
		return &s.dur
	case key == ResourceVersion:
		return &s.v
	}
	return &s.flags[key]
}

// setCtx is one context layer holding every signal it owns.
type setCtx struct {
	context.Context
	owns [numKeys]bool // never ResourceCanceled
	s    Signals
}

func (c *setCtx) Value(k any) any {
	if key, ok := k.(Key); ok {
		if key < numKeys && c.owns[key] {
			return c.s.Lookup(key)
		}
		if key == allKeys && c.ownsAll() {
			return &c.s
		}
	}
	return c.Context.Value(k)
}

// ownsAll reports whether c owns every signal WithMissing adds.
func (c *setCtx) ownsAll() bool {
	for k := Key(0); k < numKeys; k++ {
		if k != ResourceCanceled && k != ResourceVersion && !c.owns[k] {
			return false
		}
	}
	return true
}
