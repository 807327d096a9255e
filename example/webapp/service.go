package webapp

import (
	"context"
	"fmt"

	"github.com/go-kit/log"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/crud"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ServiceName is the name of the Service resource.
const ServiceName = "service"

var serviceGVK = corev1.SchemeGroupVersion.WithKind("Service")

// serviceOps is the crud.Ops of a WebApp's Service. In release 2 (enabled)
// it keeps a ClusterIP Service in front of the pods; in release 1 (not
// enabled) its desired state is "no Service", so a WebApp moved back from
// release 2 loses the Service it no longer needs.
type serviceOps struct {
	childWriter // ApplyCreateChange, ApplyUpdateChange, ApplyDeleteChange
	children    Children
	enabled     bool
	logger      log.Logger
}

// serviceWriter writes Services with client.
func serviceWriter(client kubernetes.Interface, writes *operator.OwnWrites) childWriter {
	return newChildWriter(serviceGVK, schema.GroupResource{Group: "", Resource: "services"}, writes, client.CoreV1().Services)
}

var _ crud.Ops = (*serviceOps)(nil)

func (o *serviceOps) Name() string { return ServiceName }

// GetCurrentState returns the Service named like the WebApp, or a nil
// *corev1.Service.
func (o *serviceOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	ns, name, err := nameOf(obj)
	if err != nil {
		return nil, err
	}
	return o.children.Service(ctx, ns, name)
}

// GetDesiredState returns DesiredService of the WebApp, or a nil
// *corev1.Service when the WebApp is being deleted or the resource is not
// enabled.
func (o *serviceOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	if deleting(obj) {
		return (*corev1.Service)(nil), nil
	}
	w, err := validWebAppFrom(obj)
	if err != nil {
		return nil, err
	}
	if !o.enabled {
		return (*corev1.Service)(nil), nil
	}
	return DesiredService(w), nil
}

// DesiredService returns the Service the operator keeps for w in release 2:
// a ClusterIP Service named like w, selecting w's pods, port 80 to the
// container's PortName port.
func DesiredService(w *v1alpha1.WebApp) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:            w.Name,
			Namespace:       w.Namespace,
			Labels:          childLabels(w.Name),
			OwnerReferences: []metav1.OwnerReference{ownerReference(w)},
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: selectorLabels(w.Name),
			Ports:    []corev1.ServicePort{servicePort},
		},
	}
}

// NewUpdatePatch creates a missing Service, updates one whose owned fields
// differ (labels, owner, type, selector, port) and, when the resource is not
// enabled, deletes an existing Service that the operator manages.
func (o *serviceOps) NewUpdatePatch(_ context.Context, _, currentState, desiredState any) (*crud.Patch, error) {
	current, desired, err := states[corev1.Service](currentState, desiredState)
	if err != nil {
		return nil, err
	}
	patch := crud.NewPatch()
	switch {
	case desired == nil && current == nil:
		return patch, nil
	case desired == nil:
		return deletePatch[corev1.Service](serviceGVK.Kind, current)
	}
	change := &ChildChange{Kind: serviceGVK.Kind, Namespace: desired.Namespace, Name: desired.Name, object: desired}
	if current == nil {
		var d diff
		d.setKeys("metadata.labels", desired.Labels)
		d.set("spec.type", string(desired.Spec.Type))
		d.setKeys("spec.selector", desired.Spec.Selector)
		d.set("spec.ports[http]", servicePortOf(desired.Spec.Ports))
		change.Action, change.Fields = ActionCreate, d
		patch.SetCreateChange(change)
		return patch, nil
	}
	var d diff
	d.keys("metadata.labels", current.Labels, desired.Labels, ownedChildLabels...)
	d.owner(current.OwnerReferences, desired.OwnerReferences)
	d.value("spec.type", string(current.Spec.Type), string(desired.Spec.Type))
	d.keys("spec.selector", current.Spec.Selector, desired.Spec.Selector, LabelName, LabelInstance)
	d.value("spec.ports[http]", servicePortOf(current.Spec.Ports), servicePortOf(desired.Spec.Ports))
	if len(d) > 0 {
		change.Action, change.Fields = ActionUpdate, d
		patch.SetUpdateChange(change)
	}
	return patch, nil
}

// NewDeletePatch deletes the Service when there is one.
func (o *serviceOps) NewDeletePatch(_ context.Context, _, currentState, _ any) (*crud.Patch, error) {
	return deletePatch[corev1.Service](serviceGVK.Kind, currentState)
}

// servicePortOf returns the port named PortName as
// "name port->target/protocol", or nil.
func servicePortOf(ps []corev1.ServicePort) any {
	for _, p := range ps {
		if p.Name == PortName {
			return fmt.Sprintf("%s %d->%s/%s", p.Name, p.Port, p.TargetPort.String(), p.Protocol)
		}
	}
	return nil
}
