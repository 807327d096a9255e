// Package item defines the benchmark's custom resource, Item, shared by every
// contender and by the driver: its Go types, its CustomResourceDefinition and
// the ConfigMap that an operator derives from it.
package item

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Group, Version, Kind and Resource name the Item API.
const (
	Group    = "bench.operatorkit.io"
	Version  = "v1"
	Kind     = "Item"
	Resource = "items"
)

// LabelItem is the label every derived ConfigMap carries, with the Item's
// name as value.
const LabelItem = "bench.operatorkit.io/item"

// GroupVersion is the Item API's group and version.
var GroupVersion = schema.GroupVersion{Group: Group, Version: Version}

// GVR is the Item API's group, version and resource.
var GVR = GroupVersion.WithResource(Resource)

// GVK is the Item API's group, version and kind.
var GVK = GroupVersion.WithKind(Kind)

// Spec is what a user asks for: the ConfigMap's content.
type Spec struct {
	// Message becomes the ConfigMap's "message" key.
	Message string `json:"message"`
	// Count becomes the ConfigMap's "count" key.
	Count int64 `json:"count"`
}

// Status is what the operator reports.
type Status struct {
	// ObservedGeneration is the metadata.generation the operator last
	// reconciled successfully.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions are the operator's conditions (the operatorkit contender
	// writes Ready with framework.Config.Conditions; the others write none).
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Item is the benchmark's custom resource.
type Item struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the benchmark asks of the Item's ConfigMap.
	Spec Spec `json:"spec"`
	// Status is what the contender reports; written through the status
	// subresource.
	Status Status `json:"status,omitempty"`
}

// List is a list of Items.
type List struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`

	// Items are the Items listed.
	Items []Item `json:"items"`
}

// DeepCopyInto copies i into out.
func (i *Item) DeepCopyInto(out *Item) {
	*out = *i
	out.TypeMeta = i.TypeMeta
	i.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	if i.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(i.Status.Conditions))
		for j := range i.Status.Conditions {
			i.Status.Conditions[j].DeepCopyInto(&out.Status.Conditions[j])
		}
	}
}

// DeepCopy returns a deep copy of i.
func (i *Item) DeepCopy() *Item {
	if i == nil {
		return nil
	}
	out := new(Item)
	i.DeepCopyInto(out)
	return out
}

// DeepCopyObject implements runtime.Object.
func (i *Item) DeepCopyObject() runtime.Object { return i.DeepCopy() }

// DeepCopyObject implements runtime.Object.
func (l *List) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &List{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]Item, len(l.Items))
		for i := range l.Items {
			l.Items[i].DeepCopyInto(&out.Items[i])
		}
	}
	return out
}

// AddToScheme registers Item and List under GroupVersion in s.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypeWithName(GVK, &Item{})
	s.AddKnownTypeWithName(GroupVersion.WithKind(Kind+"List"), &List{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// CRD returns the CustomResourceDefinition of Item: namespaced, with a
// status subresource and a structural schema.
func CRD() *apiextensionsv1.CustomResourceDefinition {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	integer := apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int64"}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: Resource + "." + Group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{
				Plural: Resource, Singular: "item", Kind: Kind, ListKind: Kind + "List",
			},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: Version, Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{
					Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
				},
				Schema: &apiextensionsv1.CustomResourceValidation{
					OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
						Type: "object",
						Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"spec": {
								Type:       "object",
								Properties: map[string]apiextensionsv1.JSONSchemaProps{"message": str, "count": integer},
							},
							"status": {
								Type: "object",
								Properties: map[string]apiextensionsv1.JSONSchemaProps{
									"observedGeneration": integer,
									"conditions":         conditions(),
								},
							},
						},
					},
				},
			}},
		},
	}
}

// conditions is the schema of a []metav1.Condition as controller-gen writes
// it: a list map keyed by type.
func conditions() apiextensionsv1.JSONSchemaProps {
	str := apiextensionsv1.JSONSchemaProps{Type: "string"}
	mapType := "map"
	return apiextensionsv1.JSONSchemaProps{
		Type:         "array",
		XListType:    &mapType,
		XListMapKeys: []string{"type"},
		Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
			Type:     "object",
			Required: []string{"type", "status", "reason", "lastTransitionTime"},
			Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"type": str, "status": str, "reason": str, "message": str,
				"lastTransitionTime": {Type: "string", Format: "date-time"},
				"observedGeneration": {Type: "integer", Format: "int64"},
			},
		}},
	}
}

// Data returns the ConfigMap data an operator derives from spec.
func Data(spec Spec) map[string]string {
	return map[string]string{"message": spec.Message, "count": strconv.FormatInt(spec.Count, 10)}
}

// DataEqual reports whether data is what [Data] returns for spec, without
// allocating.
func DataEqual(data map[string]string, spec Spec) bool {
	if len(data) != 2 || data["message"] != spec.Message {
		return false
	}
	c, ok := data["count"]
	if !ok {
		return false
	}
	n, err := strconv.ParseInt(c, 10, 64)
	return err == nil && n == spec.Count
}

// ConfigMap returns the ConfigMap an operator ensures for it: same namespace
// and name, the [LabelItem] label, a controller owner reference to it and
// the data from [Data].
func ConfigMap(it *Item) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       it.Namespace,
			Name:            it.Name,
			Labels:          map[string]string{LabelItem: it.Name},
			OwnerReferences: []metav1.OwnerReference{OwnerReference(it)},
		},
		Data: Data(it.Spec),
	}
	return cm
}

// OwnerReference returns the controller owner reference to it, the same
// controller-runtime's SetControllerReference writes.
func OwnerReference(it *Item) metav1.OwnerReference {
	t := true
	return metav1.OwnerReference{
		APIVersion: GroupVersion.String(), Kind: Kind, Name: it.Name, UID: it.UID,
		Controller: &t, BlockOwnerDeletion: &t,
	}
}
