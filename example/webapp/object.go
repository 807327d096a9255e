package webapp

import (
	"fmt"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/context/conditioncontext"
	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// Transform is the informer transform of the WebApp informer: it turns each
// *unstructured.Unstructured from the API server into a *v1alpha1.WebApp,
// once per event, so that resources receive typed objects. An object that
// does not decode (possible only when the CRD schema is not enforced) stays
// unstructured; the resources then fail it with an error wrapping
// ErrInvalidSpec, which the Framework reports in the Stalled condition. Transform
// never returns an error, since an error would make client-go list and
// watch again, forever.
func Transform(logger log.Logger) cache.TransformFunc {
	if logger == nil {
		logger = log.NewNopLogger()
	}
	return func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return obj, nil
		}
		w, err := v1alpha1.FromUnstructured(u)
		if err != nil {
			level.Warn(logger).Log("msg", "cannot decode webapp; leaving it unstructured", "object", objectKey(u), "err", err)
			return u, nil
		}
		return w, nil
	}
}

// webAppFrom returns obj as a *v1alpha1.WebApp: a *v1alpha1.WebApp as is, an
// *unstructured.Unstructured decoded. The result belongs to the informer's
// cache: never modify it. The error is permanent (retry.Permanent) and
// wraps ErrInvalidSpec.
func webAppFrom(obj any) (*v1alpha1.WebApp, error) {
	switch o := obj.(type) {
	case *v1alpha1.WebApp:
		if o == nil {
			return nil, invalidSpec(fmt.Errorf("%w: nil webapp", ErrInvalidSpec))
		}
		return o, nil
	case *unstructured.Unstructured:
		w, err := v1alpha1.FromUnstructured(o)
		if err != nil {
			return nil, invalidSpec(fmt.Errorf("%w: %w", ErrInvalidSpec, err))
		}
		return w, nil
	default:
		return nil, invalidSpec(fmt.Errorf("%w: unexpected object type %T", ErrInvalidSpec, obj))
	}
}

// validWebAppFrom is webAppFrom followed by Validate; its error is
// permanent.
func validWebAppFrom(obj any) (*v1alpha1.WebApp, error) {
	w, err := webAppFrom(obj)
	if err != nil {
		return nil, err
	}
	if err := Validate(w); err != nil {
		return nil, invalidSpec(err)
	}
	return w, nil
}

// invalidSpec marks err, which wraps ErrInvalidSpec, as permanent and as
// the reason ReasonInvalidSpec of the WebApp's Ready and Stalled conditions.
func invalidSpec(err error) error {
	return retry.Permanent(conditioncontext.WithReason(err, ReasonInvalidSpec))
}

// objectKey returns "namespace/name" of obj for logs and errors, or "" when
// obj has no metadata. It never formats the object itself.
func objectKey(obj any) string {
	m, err := meta.Accessor(obj)
	if err != nil || m == nil {
		return ""
	}
	if m.GetNamespace() == "" {
		return m.GetName()
	}
	return m.GetNamespace() + "/" + m.GetName()
}

// nameOf returns the namespace and name of obj, the reconciled WebApp; the
// error wraps ErrInvalidSpec. Children are named like their WebApp, so this
// is all a GetCurrentState needs, even for an invalid spec.
func nameOf(obj any) (namespace, name string, err error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return "", "", fmt.Errorf("%w: %w", ErrInvalidSpec, err)
	}
	return m.GetNamespace(), m.GetName(), nil
}

// ownerReference returns the controller owner reference of a child of w.
// BlockOwnerDeletion is left unset: it needs the update permission on
// webapps/finalizers, and the operator's finalizer already orders deletes.
func ownerReference(w *v1alpha1.WebApp) metav1.OwnerReference {
	controller := true
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(),
		Kind:       v1alpha1.Kind,
		Name:       w.Name,
		UID:        w.UID,
		Controller: &controller,
	}
}

// ownedBy reports whether refs hold the controller reference want (the
// same owner UID).
func ownedBy(refs []metav1.OwnerReference, want metav1.OwnerReference) bool {
	for _, r := range refs {
		if r.Controller != nil && *r.Controller && r.UID == want.UID && r.Kind == want.Kind && r.Name == want.Name {
			return true
		}
	}
	return false
}

// ownerKey returns the "namespace/name" key of the WebApp that owns a child
// object, from its controller owner reference or, failing that, its
// LabelInstance label, and false when obj is not a child of a WebApp.
func ownerKey(obj any) (string, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, err := meta.Accessor(obj)
	if err != nil || m == nil {
		return "", false
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		if ref.Kind == v1alpha1.Kind && groupOf(ref.APIVersion) == v1alpha1.Group {
			return m.GetNamespace() + "/" + ref.Name, true
		}
		return "", false
	}
	if name := m.GetLabels()[LabelInstance]; name != "" && m.GetLabels()[LabelManagedBy] == ManagedBy {
		return m.GetNamespace() + "/" + name, true
	}
	return "", false
}

func groupOf(apiVersion string) string {
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return ""
	}
	return gv.Group
}
