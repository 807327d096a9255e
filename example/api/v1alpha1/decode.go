package v1alpha1

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// ErrDecode is wrapped by the errors of FromUnstructured.
var ErrDecode = errors.New("decode webapp")

// FromUnstructured converts u into a new *WebApp. It never modifies u and
// never panics: input that does not fit the WebApp type (a number where a
// string belongs, a wrong apiVersion or kind, a nil object) is an error
// wrapping ErrDecode. An empty apiVersion and kind are accepted and set.
func FromUnstructured(u *unstructured.Unstructured) (w *WebApp, err error) {
	if u == nil || u.Object == nil {
		return nil, fmt.Errorf("%w: no object", ErrDecode)
	}
	if apiVersion := u.GetAPIVersion(); apiVersion != "" && apiVersion != GroupVersion.String() {
		return nil, fmt.Errorf("%w: apiVersion %q, want %q", ErrDecode, apiVersion, GroupVersion.String())
	}
	if kind := u.GetKind(); kind != "" && kind != Kind {
		return nil, fmt.Errorf("%w: kind %q, want %q", ErrDecode, kind, Kind)
	}
	// The converter is written for objects that came from JSON; arbitrary
	// in-memory values (as a fuzzer builds them) must not crash the
	// operator, so a panic becomes an error.
	defer func() {
		if r := recover(); r != nil {
			w, err = nil, fmt.Errorf("%w: %v", ErrDecode, r)
		}
	}()
	w = &WebApp{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, w); err != nil {
		return nil, fmt.Errorf("%w %s/%s: %w", ErrDecode, u.GetNamespace(), u.GetName(), err)
	}
	w.APIVersion = GroupVersion.String()
	w.Kind = Kind
	return w, nil
}

// ToUnstructured converts w into an *unstructured.Unstructured with
// apiVersion and kind set, for dynamic clients.
func ToUnstructured(w *WebApp) (*unstructured.Unstructured, error) {
	c := w.DeepCopy()
	c.APIVersion = GroupVersion.String()
	c.Kind = Kind
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(c)
	if err != nil {
		return nil, fmt.Errorf("encode webapp %s/%s: %w", w.Namespace, w.Name, err)
	}
	return &unstructured.Unstructured{Object: obj}, nil
}
