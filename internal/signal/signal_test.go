package signal_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/operatorkit/operatorkit/context/deletionallowedcontext"
	"github.com/operatorkit/operatorkit/context/finalizerskeptcontext"
	"github.com/operatorkit/operatorkit/context/reconciliationcanceledcontext"
	"github.com/operatorkit/operatorkit/context/requeuecontext"
	"github.com/operatorkit/operatorkit/context/resourcecanceledcontext"
	"github.com/operatorkit/operatorkit/context/resourceversioncontext"
	"github.com/operatorkit/operatorkit/context/updateallowedcontext"
	"github.com/operatorkit/operatorkit/context/updatenecessarycontext"
	"github.com/operatorkit/operatorkit/internal/signal"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// flagSignal is the public API of one flag package.
type flagSignal struct {
	name string
	key  signal.Key
	new  func(context.Context) context.Context
	set  func(context.Context)
	get  func(context.Context) bool
}

var flagSignals = []flagSignal{
	{"reconciliationcanceledcontext", signal.ReconciliationCanceled, reconciliationcanceledcontext.NewContext, reconciliationcanceledcontext.SetCanceled, reconciliationcanceledcontext.IsCanceled},
	{"resourcecanceledcontext", signal.ResourceCanceled, resourcecanceledcontext.NewContext, resourcecanceledcontext.SetCanceled, resourcecanceledcontext.IsCanceled},
	{"finalizerskeptcontext", signal.FinalizersKept, finalizerskeptcontext.NewContext, finalizerskeptcontext.SetKept, finalizerskeptcontext.IsKept},
	{"updateallowedcontext", signal.UpdateAllowed, updateallowedcontext.NewContext, updateallowedcontext.SetUpdateAllowed, updateallowedcontext.IsUpdateAllowed},
	{"deletionallowedcontext", signal.DeletionAllowed, deletionallowedcontext.NewContext, deletionallowedcontext.SetDeletionAllowed, deletionallowedcontext.IsDeletionAllowed},
	{"updatenecessarycontext", signal.UpdateNecessary, updatenecessarycontext.NewContext, updatenecessarycontext.SetUpdateNecessary, updatenecessarycontext.IsUpdateNecessary},
}

func TestFlagSignals(t *testing.T) {
	for _, s := range flagSignals {
		t.Run(s.name, func(t *testing.T) {
			plain := context.Background()
			s.set(plain) // must not panic
			if s.get(plain) {
				t.Fatal("getter on a plain context returned true")
			}

			ctx := s.new(plain)
			if s.get(ctx) {
				t.Fatal("getter on a new signal returned true")
			}
			child := context.WithValue(ctx, struct{}{}, 1) // signals reach through other layers
			s.set(child)
			if !s.get(ctx) || !s.get(child) {
				t.Fatal("getter after set returned false")
			}
			s.set(ctx) // setting twice is fine
			if !s.get(ctx) {
				t.Fatal("getter after second set returned false")
			}

			shadow := s.new(ctx)
			if s.get(shadow) {
				t.Fatal("a new signal under a set one must start unset")
			}

			for _, other := range flagSignals {
				if other.key != s.key && other.get(ctx) {
					t.Fatalf("setting %s set %s too", s.name, other.name)
				}
			}
		})
	}
}

func TestFlagSignalsConcurrent(t *testing.T) {
	for _, s := range flagSignals {
		t.Run(s.name, func(t *testing.T) {
			ctx := s.new(context.Background())
			var wg sync.WaitGroup
			for range 50 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					s.set(ctx)
					_ = s.get(ctx)
				}()
			}
			wg.Wait()
			if !s.get(ctx) {
				t.Fatal("signal not set after 50 concurrent setters")
			}
		})
	}
}

func TestRequeue(t *testing.T) {
	tests := []struct {
		name   string
		set    []time.Duration
		want   time.Duration
		wantOK bool
	}{
		{name: "none", wantOK: false},
		{name: "one", set: []time.Duration{time.Minute}, want: time.Minute, wantOK: true},
		{name: "shortest wins", set: []time.Duration{time.Minute, time.Second, time.Hour}, want: time.Second, wantOK: true},
		{name: "zero is a request", set: []time.Duration{time.Minute, 0}, want: 0, wantOK: true},
		{name: "negative counts as zero", set: []time.Duration{-time.Second}, want: 0, wantOK: true},
		{name: "max duration", set: []time.Duration{1<<63 - 1}, want: 1<<63 - 1, wantOK: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := requeuecontext.NewContext(context.Background())
			for _, d := range tt.set {
				requeuecontext.SetRequeueAfter(ctx, d)
			}
			got, ok := requeuecontext.RequeueAfter(ctx)
			if got != tt.want || ok != tt.wantOK {
				t.Fatalf("RequeueAfter() = %v, %v, want %v, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}

	t.Run("plain context", func(t *testing.T) {
		ctx := context.Background()
		requeuecontext.SetRequeueAfter(ctx, time.Second)
		if d, ok := requeuecontext.RequeueAfter(ctx); d != 0 || ok {
			t.Fatalf("RequeueAfter() = %v, %v, want 0, false", d, ok)
		}
	})

	t.Run("concurrent", func(t *testing.T) {
		ctx := requeuecontext.NewContext(context.Background())
		var wg sync.WaitGroup
		for i := range 50 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				requeuecontext.SetRequeueAfter(ctx, time.Duration(100-i)*time.Second)
				_, _ = requeuecontext.RequeueAfter(ctx)
			}()
		}
		wg.Wait()
		if d, _ := requeuecontext.RequeueAfter(ctx); d != 51*time.Second {
			t.Fatalf("RequeueAfter() = %v, want 51s", d)
		}
	})
}

func TestWithMissing(t *testing.T) {
	t.Run("adds every signal but resource canceled", func(t *testing.T) {
		ctx := signal.WithMissing(context.Background())
		for _, s := range flagSignals {
			s.set(ctx)
			want := s.key != signal.ResourceCanceled
			if got := s.get(ctx); got != want {
				t.Errorf("%s: get after set = %v, want %v", s.name, got, want)
			}
		}
		requeuecontext.SetRequeueAfter(ctx, time.Second)
		if _, ok := requeuecontext.RequeueAfter(ctx); !ok {
			t.Error("requeue not added")
		}
	})

	t.Run("keeps the caller's signals", func(t *testing.T) {
		caller := finalizerskeptcontext.NewContext(requeuecontext.NewContext(context.Background()))
		ctx := signal.WithMissing(caller)
		finalizerskeptcontext.SetKept(ctx)
		requeuecontext.SetRequeueAfter(ctx, time.Second)
		if !finalizerskeptcontext.IsKept(caller) {
			t.Error("finalizers kept did not reach the caller's signal")
		}
		if _, ok := requeuecontext.RequeueAfter(caller); !ok {
			t.Error("requeue did not reach the caller's signal")
		}
	})

	t.Run("returns ctx when nothing is missing", func(t *testing.T) {
		full := signal.WithMissing(context.Background())
		if got := signal.WithMissing(full); got != full {
			t.Error("WithMissing added a layer although nothing was missing")
		}
	})

	t.Run("works under a cancelable context", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, cancelChild := context.WithCancel(signal.WithMissing(parent))
		defer cancelChild()
		cancel()
		<-ctx.Done() // cancellation propagates through the signal layer
		if context.Cause(ctx) != context.Canceled {
			t.Fatalf("Cause = %v", context.Cause(ctx))
		}
	})
}

func TestGetAllocs(t *testing.T) {
	ctx := signal.WithMissing(context.Background())
	allocs := testing.AllocsPerRun(100, func() {
		_ = reconciliationcanceledcontext.IsCanceled(ctx)
		reconciliationcanceledcontext.SetCanceled(ctx)
		_, _ = requeuecontext.RequeueAfter(ctx)
	})
	if allocs != 0 {
		t.Fatalf("signal access allocates %v times, want 0", allocs)
	}
	allocs = testing.AllocsPerRun(100, func() { sink = resourcecanceledcontext.NewContext(ctx) })
	if allocs != 1 {
		t.Fatalf("NewContext allocates %v times, want 1", allocs)
	}
}

var sink context.Context

func TestWithFresh(t *testing.T) {
	// A caller whose signals are all set already: none must show through.
	caller := signal.WithMissing(resourceversioncontext.NewContext(context.Background()))
	for _, s := range flagSignals {
		s.set(caller)
	}
	requeuecontext.SetRequeueAfter(caller, time.Second)
	resourceversioncontext.SetResourceVersion(caller, "7")

	ctx := signal.WithFresh(caller)
	for _, s := range flagSignals {
		if s.key == signal.ResourceCanceled {
			continue // never part of the set: fresh per resource
		}
		if s.get(ctx) {
			t.Errorf("%s: the caller's signal shows through", s.name)
		}
		s.set(ctx)
		if !s.get(ctx) {
			t.Errorf("%s: get after set = false", s.name)
		}
	}
	if _, ok := requeuecontext.RequeueAfter(ctx); ok {
		t.Error("requeue: the caller's signal shows through")
	}
	if _, ok := resourceversioncontext.ResourceVersion(ctx); ok {
		t.Error("resourceVersion: the caller's signal shows through")
	}
	resourceversioncontext.SetResourceVersion(ctx, "8")
	if rv, _ := resourceversioncontext.ResourceVersion(ctx); rv != "8" {
		t.Errorf("resourceVersion = %q, want 8", rv)
	}
	if rv, _ := resourceversioncontext.ResourceVersion(caller); rv != "7" {
		t.Errorf("the caller's resourceVersion = %q, want 7 (untouched)", rv)
	}
	if got := signal.WithMissing(ctx); got != ctx {
		t.Error("WithMissing added a layer over WithFresh")
	}
	if allocs := testing.AllocsPerRun(100, func() { sink = signal.WithFresh(caller) }); allocs != 1 {
		t.Errorf("WithFresh allocates %v times, want 1", allocs)
	}
}

// BenchmarkWithMissing measures WithMissing on a context that holds every
// signal already, as framework.ProcessUpdate's context in a Framework's
// reconciliation does (here behind a layer of a resource set's InitCtx).
func BenchmarkWithMissing(b *testing.B) {
	type initKey struct{}
	ctx := context.WithValue(signal.WithFresh(context.Background()), initKey{}, 1)
	b.ReportAllocs()
	for b.Loop() {
		if signal.WithMissing(ctx) != ctx {
			b.Fatal("WithMissing added a layer to a context that holds every signal")
		}
	}
}

// TestWithMissingHoldsAll: WithMissing adds no layer to a context that
// holds every signal, whether one layer holds them all (WithFresh, a
// Framework's reconciliation) or several do; and one that holds only some
// of them gets the rest, the ones it holds staying visible.
func TestWithMissingHoldsAll(t *testing.T) {
	bg := context.Background()
	fresh := signal.WithFresh(bg)
	if signal.WithMissing(fresh) != fresh {
		t.Error("WithMissing added a layer to WithFresh's context")
	}
	partial := signal.WithFlag(bg, signal.FinalizersKept)
	kept := signal.FlagFrom(partial, signal.FinalizersKept)
	completed := signal.WithMissing(partial)
	if completed == partial {
		t.Fatal("WithMissing added nothing to a context holding one signal")
	}
	for _, k := range []signal.Key{signal.ReconciliationCanceled, signal.FinalizersKept, signal.UpdateAllowed, signal.DeletionAllowed, signal.UpdateNecessary} {
		if signal.FlagFrom(completed, k) == nil {
			t.Errorf("signal %d missing after WithMissing", k)
		}
	}
	if signal.DurationFrom(completed) == nil {
		t.Error("requeue signal missing after WithMissing")
	}
	if signal.FlagFrom(completed, signal.FinalizersKept) != kept {
		t.Error("WithMissing shadowed the signal the context held")
	}
	if signal.WithMissing(completed) != completed {
		t.Error("WithMissing added a layer to a context whose layers hold every signal")
	}
}
