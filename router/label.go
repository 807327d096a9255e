package router

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
func LabelIs(key, value string, orMissing bool) func(obj any) bool {
	return func(obj any) bool {
		m, ok := accessor(obj)
		if !ok {
			return false
		}
		v, ok := m.GetLabels()[key]
		return ok && v == value || !ok && orMissing
	}
}
