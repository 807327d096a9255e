package main

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05.000")+" "+format+"\n", args...)
}

func hasString(list []string, s string) bool { return slices.Contains(list, s) }

func removeString(list []string, s string) []string {
	out := make([]string, 0, len(list))
	for _, x := range list {
		if x != s {
			out = append(out, x)
		}
	}
	return out
}

// finalizerPatch is a JSON merge patch that sets metadata.finalizers to
// finalizers, with obj's resourceVersion as precondition.
func finalizerPatch(obj metav1.Object, finalizers []string) []byte {
	if finalizers == nil {
		finalizers = []string{}
	}
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"finalizers":      finalizers,
		"resourceVersion": obj.GetResourceVersion(),
	}})
	return b
}

// stripManagedFields is an informer transform that drops
// metadata.managedFields.
func stripManagedFields(obj any) (any, error) {
	if a, err := meta.Accessor(obj); err == nil {
		a.SetManagedFields(nil)
	}
	return obj, nil
}
