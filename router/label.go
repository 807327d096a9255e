package router

import "k8s.io/apimachinery/pkg/api/meta"

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
		m, err := meta.Accessor(obj)
		if err != nil {
			return false
		}
		v, ok := m.GetLabels()[key]
		return ok && v == value || !ok && orMissing
	}
}
