// Command statuscost measures what one status write of an Item costs the
// API server, by what the write is and what the object holds: the question
// behind operatorkit-readme's wall time in docs/benchmarks.md (the API
// server's core is the benchmark's bottleneck, so its CPU per write sets the
// wall time).
//
// It starts a real API server with testenv, installs the Item CRD and
// creates -items Items for each variant. Then, -rounds times, it bumps the
// observed generation of every Item of each variant in turn (round 1 writes
// the first status and is not counted), reading the API server process's
// CPU time around each variant's batch: the variants take turns, so that a
// drift of the machine's speed falls on all of them alike. The variants:
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
// It prints a Markdown table: the server's CPU per write (the
// counted rounds' median, and their min..max) and as a ratio to merge-gen.
//
//	cd bench && go run ./cmd/statuscost -items 500 -rounds 10
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

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/bench/internal/proc"
	"github.com/operatorkit/operatorkit/testenv"
)

func main() {
	var o options
	flag.IntVar(&o.items, "items", 500, "Items per variant")
	flag.IntVar(&o.rounds, "rounds", 10, "status writes per Item and variant (the first is not counted)")
	flag.BoolVar(&o.pin, "pin", true, "pin this program and the API server to one CPU (as benchrun pins the server)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "statuscost:", err)
		os.Exit(1)
	}
}

type options struct {
	items, rounds int
	pin           bool
}

// variant is one kind of status write.
type variant struct {
	name string
	// conditions tells whether the Items of the variant carry the Ready
	// condition.
	conditions bool
	// body returns the patch type and body that sets observed generation
	// gen; first is the Item's first status write.
	body func(gen int64, first bool) (types.PatchType, any)
}

// readyAt is a Ready condition of generation gen, with a fixed transition
// time (it stays True).
func readyAt(gen int64, since string) map[string]any {
	return map[string]any{"type": "Ready", "status": "True", "reason": "Reconciled",
		"message": "all resources are up to date", "lastTransitionTime": since, "observedGeneration": gen}
}

// reference is the variant the others are compared with: the limit's write.
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

func run(ctx context.Context, o options, out io.Writer) error {
	if o.items < 1 || o.rounds < 2 {
		return fmt.Errorf("-items must be at least 1 and -rounds at least 2 (the first round is not counted), got %d and %d", o.items, o.rounds)
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
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	items := dyn.Resource(item.GVR).Namespace("default")

	vs := variants(metav1.Now().UTC().Format(time.RFC3339))
	for _, v := range vs {
		for i := range o.items {
			u := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": item.GroupVersion.String(), "kind": item.Kind,
				"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", v.name, i)},
				"spec":     map[string]any{"message": "m", "count": int64(1)},
			}}
			if _, err := items.Create(ctx, u, metav1.CreateOptions{}); err != nil {
				return fmt.Errorf("create Item %s: %w", u.GetName(), err)
			}
		}
	}
	perWrite := make([][]float64, len(vs)) // µs of server CPU per write, per counted round
	for gen := int64(1); gen <= int64(o.rounds); gen++ {
		for vi, v := range vs {
			before, err := proc.Read(env.PID())
			if err != nil {
				return err
			}
			for i := range o.items {
				name := fmt.Sprintf("%s-%d", v.name, i)
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
				if _, err := items.Patch(ctx, name, pt, data, opts, "status"); err != nil {
					return fmt.Errorf("variant %s, Item %s, round %d: %w", v.name, name, gen, err)
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
	if err := checkConditions(ctx, items, vs); err != nil {
		return err
	}

	fmt.Fprintf(out, "%d Items per variant, %d counted rounds; %s\n\n", o.items, o.rounds-1, proc.Machine())
	fmt.Fprintln(out, "| variant | Ready condition in the object | API server CPU µs per write: median of rounds (min..max) | ratio to merge-gen |")
	fmt.Fprintln(out, "|---|---|---|---|")
	ref := median(perWrite[slices.IndexFunc(vs, func(v variant) bool { return v.name == reference })])
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
