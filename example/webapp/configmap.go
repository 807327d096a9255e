package webapp

import (
	"context"
	"fmt"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/crud"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ContentKey is the ConfigMap key that holds a WebApp's content.
const ContentKey = "index.html"

// ConfigMapName is the name of the ConfigMap resource.
const ConfigMapName = "configmap"

var configMapGVK = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// configMapOps is the crud.Ops of a WebApp's ConfigMap, which holds the
// content under ContentKey.
type configMapOps struct {
	childWriter // ApplyCreateChange, ApplyUpdateChange, ApplyDeleteChange
	children    Children
	logger      log.Logger
}

// configMapWriter writes ConfigMaps with client.
func configMapWriter(client kubernetes.Interface, writes *operator.OwnWrites) childWriter {
	return newChildWriter(configMapGVK, schema.GroupResource{Group: "", Resource: "configmaps"}, writes, client.CoreV1().ConfigMaps)
}

var _ crud.Ops = (*configMapOps)(nil)

func (o *configMapOps) Name() string { return ConfigMapName }

// GetCurrentState returns the ConfigMap named like the WebApp, or a nil
// *corev1.ConfigMap. It needs only the object's name and namespace, so it
// works for objects whose spec is invalid (and can be deleted).
func (o *configMapOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	ns, name, err := nameOf(obj)
	if err != nil {
		return nil, err
	}
	return o.children.ConfigMap(ctx, ns, name)
}

// GetDesiredState returns DesiredConfigMap of the WebApp, or a nil
// *corev1.ConfigMap when the WebApp is being deleted. An invalid spec is a
// permanent error wrapping ErrInvalidSpec.
func (o *configMapOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	if deleting(obj) {
		return (*corev1.ConfigMap)(nil), nil
	}
	w, err := validWebAppFrom(obj)
	if err != nil {
		return nil, err
	}
	return DesiredConfigMap(w), nil
}

// DesiredConfigMap returns the ConfigMap the operator keeps for w: named
// like w, labelled with the child labels, owned by w, with w's content
// under ContentKey.
func DesiredConfigMap(w *v1alpha1.WebApp) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Name:            w.Name,
			Namespace:       w.Namespace,
			Labels:          childLabels(w.Name),
			OwnerReferences: []metav1.OwnerReference{ownerReference(w)},
		},
		Data: map[string]string{ContentKey: w.Spec.Content},
	}
}

// NewUpdatePatch creates a missing ConfigMap and updates one whose owned
// fields (labels, owner, content) differ.
func (o *configMapOps) NewUpdatePatch(_ context.Context, _, currentState, desiredState any) (*crud.Patch, error) {
	current, desired, err := states[corev1.ConfigMap](currentState, desiredState)
	if err != nil || desired == nil {
		return nil, err
	}
	patch := crud.NewPatch()
	change := &ChildChange{Kind: configMapGVK.Kind, Namespace: desired.Namespace, Name: desired.Name, object: desired}
	if current == nil {
		change.Action = ActionCreate
		var d diff
		d.setKeys("metadata.labels", desired.Labels)
		d.setKeys("data", desired.Data)
		change.Fields = d
		patch.SetCreateChange(change)
		return patch, nil
	}
	var d diff
	d.keys("metadata.labels", current.Labels, desired.Labels, ownedChildLabels...)
	d.owner(current.OwnerReferences, desired.OwnerReferences)
	d.keys("data", current.Data, desired.Data, ContentKey)
	if len(d) > 0 {
		change.Action = ActionUpdate
		change.Fields = d
		patch.SetUpdateChange(change)
	}
	return patch, nil
}

// NewDeletePatch deletes the ConfigMap when there is one.
func (o *configMapOps) NewDeletePatch(_ context.Context, _, currentState, _ any) (*crud.Patch, error) {
	return deletePatch[corev1.ConfigMap](configMapGVK.Kind, currentState)
}

// ownedChildLabels are the label keys the operator owns on child objects.
var ownedChildLabels = []string{LabelManagedBy, LabelName, LabelInstance}

// deleting reports whether obj is being deleted.
func deleting(obj any) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetDeletionTimestamp() != nil
}

// states asserts the current and desired states of a child resource.
func states[T any](currentState, desiredState any) (current, desired *T, err error) {
	current, ok := currentState.(*T)
	if !ok && currentState != nil {
		return nil, nil, fmt.Errorf("current state is %T, want %T", currentState, current)
	}
	desired, ok = desiredState.(*T)
	if !ok && desiredState != nil {
		return nil, nil, fmt.Errorf("desired state is %T, want %T", desiredState, desired)
	}
	return current, desired, nil
}

// deletePatch returns a patch deleting the current child object, if there
// is one and it carries LabelManagedBy=ManagedBy.
func deletePatch[T any, PT interface {
	*T
	metav1.Object
}](kind string, currentState any) (*crud.Patch, error) {
	current, ok := currentState.(PT)
	if !ok && currentState != nil {
		return nil, fmt.Errorf("current state is %T, want %T", currentState, current)
	}
	patch := crud.NewPatch()
	if current == nil || current.GetLabels()[LabelManagedBy] != ManagedBy {
		return patch, nil // nothing there, or not the operator's to delete
	}
	patch.SetDeleteChange(&ChildChange{
		Action:    ActionDelete,
		Kind:      kind,
		Namespace: current.GetNamespace(),
		Name:      current.GetName(),
		uid:       string(current.GetUID()),
	})
	return patch, nil
}

// childChange asserts a change of a child resource.
func childChange(change any) (*ChildChange, error) {
	c, ok := change.(*ChildChange)
	if !ok || c == nil {
		return nil, fmt.Errorf("change is %T, want *webapp.ChildChange", change)
	}
	return c, nil
}

// applyOptions are the options of every server-side apply of a child.
func applyOptions() metav1.PatchOptions {
	force := true
	return metav1.PatchOptions{FieldManager: ManagedBy, Force: &force}
}

// deleteOptions deletes the object of c only if it still has the UID seen
// when the change was made, so that a re-created object is not deleted by
// a stale change.
func deleteOptions(c *ChildChange) metav1.DeleteOptions {
	opts := metav1.DeleteOptions{}
	if c.uid != "" {
		uid := types.UID(c.uid)
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	return opts
}

// ignoreNotFound returns nil for a NotFound error, else err.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
