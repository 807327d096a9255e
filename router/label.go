package router

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// accessor returns obj's metadata, or false when it has none: no
// metadata, or a nil pointer of a type that has it (meta.Accessor takes
// it, and its getters would dereference nil).
func accessor(obj any) (metav1.Object, bool) {
	m, err := meta.Accessor(obj)
	if err != nil || nilptr.Is(m) {
		return nil, false
	}
	return m, true
}

// LabelIs returns a ResourceSetConfig.Handles function that routes objects
// by the value of one label, as operators route objects to the resource
// set of a release or version: it reports whether obj has the label key
// with exactly value or, when orMissing, has no label key at all (one set,
// usually the first release, takes the objects without the label). The
// comparison is exact ("2" is neither " 2" nor "02"), so that no object is
// routed by a normalisation. Objects without metadata (nil included) are
// handled by no set.
//
// A key that is not a valid label key (a qualified name such as
// "example.com/release") or a value that is not a valid label value
// matches no object, with or without orMissing: the API server accepts no
// object with such a label, and a set that took every object for a label
// nobody can set would take the other sets' objects too. The objects go
// to the other sets, or to none (their Stalled condition says so), never
// to this one by mistake. LabelIs does not panic; check a key or value taken from
// configuration with [ValidateLabel], which names what is wrong.
func LabelIs(key, value string, orMissing bool) func(obj any) bool {
	if ValidateLabel(key, value) != nil {
		return func(any) bool { return false }
	}
	return func(obj any) bool {
		m, ok := accessor(obj)
		if !ok {
			return false
		}
		v, ok := m.GetLabels()[key]
		return ok && v == value || !ok && orMissing
	}
}

// ValidateLabel returns nil when key is a valid label key and value a
// valid label value, as the API server checks them, and otherwise an error
// matching [ErrInvalidConfig] that names the one that is not and why:
// [LabelIs] matches no object exactly when ValidateLabel returns an error.
func ValidateLabel(key, value string) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("%w: label key %q is not valid: %s", ErrInvalidConfig, key, strings.Join(errs, "; "))
	}
	if errs := validation.IsValidLabelValue(value); len(errs) > 0 {
		return fmt.Errorf("%w: label value %q (of key %q) is not valid: %s", ErrInvalidConfig, value, key, strings.Join(errs, "; "))
	}
	return nil
}
