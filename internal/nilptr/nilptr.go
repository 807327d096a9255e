// Package nilptr tells a nil pointer held in an interface (a "typed nil",
// such as a *informer.Informer that was never made) from a value, so that
// constructors can refuse it, naming the field, instead of panicking later
// when one of its methods dereferences it.
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
