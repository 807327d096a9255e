package webapp

import (
	"context"
	"fmt"

	"github.com/go-kit/log"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/operatorkit/operatorkit/example/api/v1alpha1"
	"github.com/operatorkit/operatorkit/operator"
	"github.com/operatorkit/operatorkit/resource/crud"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// DeploymentName is the name of the Deployment resource.
const DeploymentName = "deployment"

// The pod the Deployment runs.
const (
	// ContainerName is the name of the container that serves the content.
	ContainerName = "web"
	// ContainerPort is the port the container serves on, named PortName.
	ContainerPort = 8080
	// PortName names the container port and the Service's target port.
	PortName = "http"
	// ContentPath is where the ConfigMap is mounted in the container.
	ContentPath = "/usr/share/nginx/html"
	// contentVolume names the ConfigMap volume.
	contentVolume = "content"
)

var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

// deploymentOps is the crud.Ops of a WebApp's Deployment, which runs
// spec.replicas pods of spec.image serving the ConfigMap.
type deploymentOps struct {
	childWriter // ApplyCreateChange, ApplyUpdateChange, ApplyDeleteChange
	children    Children
	release     string
	logger      log.Logger
}

// deploymentWriter writes Deployments with client. Deletes propagate in the
// background: a real cluster's garbage collector then deletes the
// ReplicaSets and pods (the test API server has none).
func deploymentWriter(client kubernetes.Interface, writes *operator.OwnWrites) childWriter {
	return newChildWriter(deploymentGVK, schema.GroupResource{Group: "apps", Resource: "deployments"}, writes, client.AppsV1().Deployments, metav1.DeletePropagationBackground)
}

var _ crud.Ops = (*deploymentOps)(nil)

func (o *deploymentOps) Name() string { return DeploymentName }

// GetCurrentState returns the Deployment named like the WebApp, or a nil
// *appsv1.Deployment.
func (o *deploymentOps) GetCurrentState(ctx context.Context, obj any) (any, error) {
	ns, name, err := nameOf(obj)
	if err != nil {
		return nil, err
	}
	return o.children.Deployment(ctx, ns, name)
}

// GetDesiredState returns DesiredDeployment of the WebApp for the release,
// or a nil *appsv1.Deployment when the WebApp is being deleted.
func (o *deploymentOps) GetDesiredState(_ context.Context, obj any) (any, error) {
	if deleting(obj) {
		return (*appsv1.Deployment)(nil), nil
	}
	w, err := validWebAppFrom(obj)
	if err != nil {
		return nil, err
	}
	return DesiredDeployment(w, o.release), nil
}

// DesiredDeployment returns the Deployment the operator keeps for w in the
// given release: named like w, labelled, owned by w, with spec.replicas
// pods running spec.image with the ConfigMap mounted at ContentPath.
// Release 2 adds LabelRelease "2" and AnnotationService to the pod
// template, so moving a WebApp to release 2 rolls its pods.
func DesiredDeployment(w *v1alpha1.WebApp, release string) *appsv1.Deployment {
	podLabels := selectorLabels(w.Name)
	var podAnnotations map[string]string
	if release == Release2 {
		podLabels[LabelRelease] = Release2
		podAnnotations = map[string]string{AnnotationService: w.Name}
	}
	n := replicas(w)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            w.Name,
			Namespace:       w.Namespace,
			Labels:          childLabels(w.Name),
			OwnerReferences: []metav1.OwnerReference{ownerReference(w)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: selectorLabels(w.Name)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: podAnnotations},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{{
						Name:  ContainerName,
						Image: w.Spec.Image,
						Ports: []corev1.ContainerPort{{Name: PortName, ContainerPort: ContainerPort, Protocol: corev1.ProtocolTCP}},
						VolumeMounts: []corev1.VolumeMount{{
							Name: contentVolume, MountPath: ContentPath, ReadOnly: true,
						}},
					}},
					Volumes: []corev1.Volume{{
						Name: contentVolume,
						VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: w.Name},
						}},
					}},
				},
			},
		},
	}
}

// NewUpdatePatch creates a missing Deployment and updates one whose owned
// fields differ: labels, owner, replicas, the pod template's owned labels
// and annotations, and the container's image, port and mount.
func (o *deploymentOps) NewUpdatePatch(_ context.Context, _, currentState, desiredState any) (*crud.Patch, error) {
	current, desired, err := states[appsv1.Deployment](currentState, desiredState)
	if err != nil || desired == nil {
		return nil, err
	}
	patch := crud.NewPatch()
	change := &ChildChange{Kind: deploymentGVK.Kind, Namespace: desired.Namespace, Name: desired.Name, object: desired}
	want := &desired.Spec.Template.Spec.Containers[0]
	if current == nil {
		var d diff
		d.setKeys("metadata.labels", desired.Labels)
		d.set("spec.replicas", desired.Spec.Replicas)
		d.setKeys("spec.template.metadata.labels", desired.Spec.Template.Labels)
		d.setKeys("spec.template.metadata.annotations", desired.Spec.Template.Annotations)
		d.set("spec.template.spec.containers[web].image", want.Image)
		change.Action, change.Fields = ActionCreate, d
		patch.SetCreateChange(change)
		return patch, nil
	}
	var d diff
	d.keys("metadata.labels", current.Labels, desired.Labels, ownedChildLabels...)
	d.owner(current.OwnerReferences, desired.OwnerReferences)
	d.value("spec.replicas", current.Spec.Replicas, desired.Spec.Replicas)
	d.keys("spec.template.metadata.labels", current.Spec.Template.Labels, desired.Spec.Template.Labels, LabelName, LabelInstance, LabelRelease)
	d.keys("spec.template.metadata.annotations", current.Spec.Template.Annotations, desired.Spec.Template.Annotations, AnnotationService)
	have := container(current.Spec.Template.Spec.Containers, ContainerName)
	if have == nil {
		d.value("spec.template.spec.containers[web]", nil, "container "+ContainerName)
	} else {
		d.value("spec.template.spec.containers[web].image", have.Image, want.Image)
		d.value("spec.template.spec.containers[web].ports[http]", portOf(have.Ports, PortName), portOf(want.Ports, PortName))
		d.value("spec.template.spec.containers[web].volumeMounts[content]", mountOf(have.VolumeMounts, contentVolume), mountOf(want.VolumeMounts, contentVolume))
	}
	d.value("spec.template.spec.volumes[content].configMap", volumeConfigMap(current.Spec.Template.Spec.Volumes), volumeConfigMap(desired.Spec.Template.Spec.Volumes))
	if len(d) > 0 {
		change.Action, change.Fields = ActionUpdate, d
		patch.SetUpdateChange(change)
	}
	return patch, nil
}

// NewDeletePatch deletes the Deployment when there is one.
func (o *deploymentOps) NewDeletePatch(_ context.Context, _, currentState, _ any) (*crud.Patch, error) {
	return deletePatch[appsv1.Deployment](deploymentGVK.Kind, currentState)
}

func container(cs []corev1.Container, name string) *corev1.Container {
	for i := range cs {
		if cs[i].Name == name {
			return &cs[i]
		}
	}
	return nil
}

// portOf returns the port named name as "name:port/protocol", or nil.
func portOf(ps []corev1.ContainerPort, name string) any {
	for _, p := range ps {
		if p.Name == name {
			return fmt.Sprintf("%s:%d/%s", p.Name, p.ContainerPort, p.Protocol)
		}
	}
	return nil
}

// mountOf returns the mount of the volume name as "path (ro)", or nil.
func mountOf(ms []corev1.VolumeMount, name string) any {
	for _, m := range ms {
		if m.Name == name {
			if m.ReadOnly {
				return m.MountPath + " (ro)"
			}
			return m.MountPath
		}
	}
	return nil
}

// volumeConfigMap returns the ConfigMap name of the content volume, or nil.
func volumeConfigMap(vs []corev1.Volume) any {
	for _, v := range vs {
		if v.Name == contentVolume && v.ConfigMap != nil {
			return v.ConfigMap.Name
		}
	}
	return nil
}

// servicePort is the port of the Service, which targets PortName.
var servicePort = corev1.ServicePort{Name: PortName, Port: 80, TargetPort: intstr.FromString(PortName), Protocol: corev1.ProtocolTCP}
