// Package nilptr tells a nil pointer held in an interface (a "typed nil",
// such as a *informer.Informer that was never made) from a value, so that
// constructors can refuse it, naming the field, instead of panicking later
// when one of its methods dereferences it; and two values from one pointer
// to shared state (a factory that returns the same backoff twice).
package nilptr

import "reflect"

// Is reports whether v is nil or holds a nil pointer.
func Is(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	return rv.Kind() == reflect.Pointer && rv.IsNil()
}

// Same reports whether a and b are one pointer to a value with state: a
// factory that returned a and then b shares that state between its
// callers. Pointers to zero-size values (&backoff.ZeroBackOff{}) may be
// equal without sharing anything.
func Same(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	return va.Kind() == reflect.Pointer && va.Type() == vb.Type() && va.Type().Elem().Size() > 0 && va.Pointer() == vb.Pointer()
}
