// Command statuscost measures what one write costs the API server, by what
// the write is and what the object holds: the question behind
// operatorkit-readme's wall time in docs/benchmarks.md (the API server's
// core is the benchmark's bottleneck, so its CPU per write sets the wall
// time). -kind status (the default) measures the status writes of an Item,
// -kind configmap the writes of the Item's ConfigMap.
//
// It starts a real API server with testenv, installs the Item CRD and
// creates -items objects for each variant. Then, -rounds times, it changes
// every object of each variant in turn (round 1 writes the first status,
// or creates the ConfigMap, and is not counted), reading the API server
// process's CPU time around each variant's batch: the variants take turns,
// so that a drift of the machine's speed falls on all of them alike.
//
// The status variants bump the Item's observed generation:
//
//   - apply: server-side apply of status.observedGeneration and a Ready
//     condition (with its observedGeneration), forced, on the status
//     subresource: what framework.Config.Conditions writes;
//   - jsonpatch: the same change as a JSON patch that tests the condition's
//     index and replaces it;
//   - merge-cond: the same change as a JSON merge patch (the whole list);
//   - jsonpatch-gen: a JSON patch of status.observedGeneration alone, the
//     Ready condition present and left as it is;
//   - merge-gen: a merge patch of status.observedGeneration alone, in Items
//     without conditions: what the benchmark's limit writes.
//
// The configmap variants change the ConfigMap's data (the labels and the
// controller owner reference resource/child gives a child stay as they
// are):
//
//   - apply: server-side apply of the whole desired ConfigMap, forced, as
//     resource/child creates and updates a child;
//   - merge: a JSON merge patch of the data alone;
//   - update: a PUT of the last answer with the new data, as the
//     benchmark's limit and controller-runtime's CreateOrUpdate write.
//
// It prints a Markdown table: the server's CPU per write (the counted
// rounds' median, and their min..max) and as a ratio to the reference
// variant (merge-gen, update).
//
//	cd bench && go run ./cmd/statuscost -items 500 -rounds 10
//	cd bench && go run ./cmd/statuscost -kind configmap -items 300 -rounds 16
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/testenv"
)

func main() {
	var o options
	flag.StringVar(&o.kind, "kind", kindStatus, "what is written: "+kindStatus+" (an Item's status) or "+kindConfigMap+" (its ConfigMap)")
	flag.IntVar(&o.items, "items", 500, "objects per variant")
	flag.IntVar(&o.rounds, "rounds", 10, "writes per object and variant (the first is not counted)")
	flag.BoolVar(&o.pin, "pin", true, "pin this program and the API server to one CPU (as benchrun pins the server)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "statuscost:", err)
		os.Exit(1)
	}
}

const (
	kindStatus    = "status"
	kindConfigMap = "configmap"
)

type options struct {
	kind          string
	items, rounds int
	pin           bool
}

// variant is one kind of write.
type variant struct {
	name string
	// conditions tells whether the Items of a status variant carry the
	// Ready condition.
	conditions bool
	// body returns the patch type and body that sets observed generation
	// gen; first is the Item's first status write. Status variants only.
	body func(gen int64, first bool) (types.PatchType, any)
	// write makes a configmap variant's write of round gen to the
	// ConfigMap name (round 1 creates it).
	write func(ctx context.Context, name string, gen int64) error
}

// writer is the set of variants of one -kind: prepare creates the objects
// before round 1, check verifies them after the last round, rounds.
type writer struct {
	variants  []variant
	reference string
	prepare   func(ctx context.Context, names func(v variant) []string) error
	write     func(ctx context.Context, v variant, name string, gen int64) error
	check     func(ctx context.Context, rounds int64) error
}

// readyAt is a Ready condition of generation gen, with a fixed transition
// time (it stays True).
func readyAt(gen int64, since string) map[string]any {
	return map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled",
		"message": "all resources are up to date", "lastTransitionTime": since, "observedGeneration": gen}
}

// reference is the status variant the others are compared with: the
// limit's write.
const reference = "merge-gen"

func variants(since string) []variant {
	status := func(gen int64) map[string]any {
		return map[string]any{"observedGeneration": gen, "conditions": []any{readyAt(gen, since)}}
	}
	// jsonPatch is a JSON patch variant's body: on the Item's first write,
	// one that adds the whole status (there is nothing to test or replace
	// yet); then ops.
	jsonPatch := func(gen int64, first bool, ops ...any) (types.PatchType, any) {
		if first {
			return types.JSONPatchType, []any{map[string]any{"op": "add", "path": "/status", "value": status(gen)}}
		}
		return types.JSONPatchType, ops
	}
	return []variant{
		{name: "apply", conditions: true, body: func(gen int64, _ bool) (types.PatchType, any) {
			return types.ApplyPatchType, map[string]any{"apiVersion": item.GroupVersion.String(), "kind": item.Kind, "status": status(gen)}
		}},
		{name: "jsonpatch", conditions: true, body: func(gen int64, first bool) (types.PatchType, any) {
			return jsonPatch(gen, first,
				map[string]any{"op": "test", "path": "/status/conditions/0/type", "value": "Ready"},
				map[string]any{"op": "replace", "path": "/status/conditions/0", "value": readyAt(gen, since)},
				map[string]any{"op": "replace", "path": "/status/observedGeneration", "value": gen})
		}},
		{name: "merge-cond", conditions: true, body: func(gen int64, _ bool) (types.PatchType, any) {
			return types.MergePatchType, map[string]any{"status": status(gen)}
		}},
		{name: "jsonpatch-gen", conditions: true, body: func(gen int64, first bool) (types.PatchType, any) {
			return jsonPatch(gen, first, map[string]any{"op": "replace", "path": "/status/observedGeneration", "value": gen})
		}},
		{name: reference, body: func(gen int64, _ bool) (types.PatchType, any) {
			return types.MergePatchType, map[string]any{"status": map[string]any{"observedGeneration": gen}}
		}},
	}
}

// statusWriter writes the status variants to Items.
func statusWriter(cfg *rest.Config) (*writer, error) {
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	items := dyn.Resource(item.GVR).Namespace("default")
	vs := variants(metav1.Now().UTC().Format(time.RFC3339))
	return &writer{
		variants:  vs,
		reference: reference,
		prepare: func(ctx context.Context, names func(v variant) []string) error {
			for _, v := range vs {
				for _, name := range names(v) {
					u := &unstructured.Unstructured{Object: map[string]any{
						"apiVersion": item.GroupVersion.String(), "kind": item.Kind,
						"metadata": map[string]any{"name": name},
						"spec":     map[string]any{"message": "m", "count": int64(1)},
					}}
					if _, err := items.Create(ctx, u, metav1.CreateOptions{}); err != nil {
						return fmt.Errorf("create Item %s: %w", name, err)
					}
				}
			}
			return nil
		},
		write: func(ctx context.Context, v variant, name string, gen int64) error {
			pt, body := v.body(gen, gen == 1)
			data, err := json.Marshal(body)
			if err != nil {
				return err
			}
			opts := metav1.PatchOptions{FieldManager: "statuscost"}
			if pt == types.ApplyPatchType {
				force := true
				opts.Force = &force
			}
			_, err = items.Patch(ctx, name, pt, data, opts, "status")
			return err
		},
		check: func(ctx context.Context, _ int64) error { return checkConditions(ctx, items, vs) },
	}, nil
}

func run(ctx context.Context, o options, out io.Writer) error {
	if o.items < 1 || o.rounds < 2 {
		return fmt.Errorf("-items must be at least 1 and -rounds at least 2 (the first round is not counted), got %d and %d", o.items, o.rounds)
	}
	if o.kind != kindStatus && o.kind != kindConfigMap {
		return fmt.Errorf("-kind must be %s or %s, got %q", kindStatus, kindConfigMap, o.kind)
	}
	if o.pin && proc.NumCPU() < 2 {
		o.pin = false
	}
	if o.pin {
		// Before the server starts, so that it inherits the mask.
		if err := proc.PinSelf([]int{0}); err != nil {
			return fmt.Errorf("pin: %w", err)
		}
	}
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		return err
	}
	defer env.Stop()
	if o.pin {
		if err := proc.Pin(env.PID(), []int{0}); err != nil {
			return fmt.Errorf("pin the API server: %w", err)
		}
	}
	cfg := env.Config()
	cfg.QPS, cfg.Burst = -1, -1 // no client-side rate limit: measure the server
	if err := item.InstallCRD(ctx, cfg); err != nil {
		return err
	}
	var w *writer
	if o.kind == kindConfigMap {
		w, err = configMapWriter(cfg)
	} else {
		w, err = statusWriter(cfg)
	}
	if err != nil {
		return err
	}
	names := func(v variant) []string {
		ns := make([]string, o.items)
		for i := range ns {
			ns[i] = fmt.Sprintf("%s-%d", v.name, i)
		}
		return ns
	}
	if err := w.prepare(ctx, names); err != nil {
		return err
	}
	vs := w.variants
	perWrite := make([][]float64, len(vs)) // µs of server CPU per write, per counted round
	for gen := int64(1); gen <= int64(o.rounds); gen++ {
		for vi, v := range vs {
			before, err := proc.Read(env.PID())
			if err != nil {
				return err
			}
			for _, name := range names(v) {
				if err := w.write(ctx, v, name, gen); err != nil {
					return fmt.Errorf("variant %s, object %s, round %d: %w", v.name, name, gen, err)
				}
			}
			after, err := proc.Read(env.PID())
			if err != nil {
				return err
			}
			if gen > 1 {
				perWrite[vi] = append(perWrite[vi], (after.CPUSeconds-before.CPUSeconds)/float64(o.items)*1e6)
			}
		}
	}
	if err := w.check(ctx, int64(o.rounds)); err != nil {
		return err
	}

	fmt.Fprintf(out, "%s writes: %d objects per variant, %d counted rounds; %s\n\n", o.kind, o.items, o.rounds-1, proc.Machine())
	fmt.Fprintf(out, "| variant | Ready condition in the object | API server CPU µs per write: median of rounds (min..max) | ratio to %s |\n", w.reference)
	fmt.Fprintln(out, "|---|---|---|---|")
	ref := median(perWrite[slices.IndexFunc(vs, func(v variant) bool { return v.name == w.reference })])
	for vi, v := range vs {
		m := median(perWrite[vi])
		fmt.Fprintf(out, "| %s | %v | %.0f (%.0f..%.0f) | %.2f |\n", v.name, v.conditions, m,
			slices.Min(perWrite[vi]), slices.Max(perWrite[vi]), m/ref)
	}
	return nil
}

// checkConditions checks that every variant's writes did what they claim:
// one Ready condition in the Items of the variants that write one, none in
// the others.
func checkConditions(ctx context.Context, items dynamic.ResourceInterface, vs []variant) error {
	for _, v := range vs {
		u, err := items.Get(ctx, v.name+"-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		conds, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
		if err != nil {
			return err
		}
		want := 0
		if v.conditions {
			want = 1
		}
		if len(conds) != want {
			return fmt.Errorf("variant %s: Item %s has %d conditions, want %d", v.name, u.GetName(), len(conds), want)
		}
	}
	return nil
}

// median returns the median of xs (not empty).
func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}
