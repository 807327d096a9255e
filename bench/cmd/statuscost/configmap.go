package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/operatorkit/operatorkit/bench/internal/item"
	"github.com/operatorkit/operatorkit/resource/child"
)

// configMapReference is the configmap variant the others are compared
// with: the limit's write.
const configMapReference = "update"

// configMapWriter writes the configmap variants. Each ConfigMap carries
// what resource/child gives a child (the label LabelManagedBy, the Item
// label, a controller owner reference); round gen sets the data of an
// Item of spec {message: "m-gen", count: gen}.
func configMapWriter(cfg *rest.Config) (*writer, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	cms := kube.CoreV1().ConfigMaps("default")
	desired := func(name string, gen int64) *corev1.ConfigMap {
		t := true
		return &corev1.ConfigMap{
			TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default",
				Labels: map[string]string{child.LabelManagedBy: "statuscost", item.LabelItem: name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: item.GroupVersion.String(), Kind: item.Kind,
					Name: name, UID: types.UID("uid-" + name), Controller: &t, BlockOwnerDeletion: &t}}},
			Data: item.Data(spec(gen)),
		}
	}
	last := map[string]*corev1.ConfigMap{} // the answer to the last write, for update
	create := func(ctx context.Context, name string, gen int64) error {
		cm, err := cms.Create(ctx, desired(name, gen), metav1.CreateOptions{FieldManager: "statuscost"})
		last[name] = cm
		return err
	}
	vs := []variant{
		{name: "apply", write: func(ctx context.Context, name string, gen int64) error {
			body, err := json.Marshal(desired(name, gen))
			if err != nil {
				return err
			}
			force := true
			_, err = cms.Patch(ctx, name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "statuscost", Force: &force})
			return err
		}},
		{name: "merge", write: func(ctx context.Context, name string, gen int64) error {
			if gen == 1 {
				return create(ctx, name, gen)
			}
			body, err := json.Marshal(map[string]any{"data": item.Data(spec(gen))})
			if err != nil {
				return err
			}
			_, err = cms.Patch(ctx, name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: "statuscost"})
			return err
		}},
		{name: configMapReference, write: func(ctx context.Context, name string, gen int64) error {
			if gen == 1 {
				return create(ctx, name, gen)
			}
			cm := last[name].DeepCopy()
			cm.Data = item.Data(spec(gen))
			cm, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "statuscost"})
			last[name] = cm
			return err
		}},
	}
	return &writer{
		variants:  vs,
		reference: configMapReference,
		prepare:   func(context.Context, func(variant) []string) error { return nil },
		write: func(ctx context.Context, v variant, name string, gen int64) error {
			return v.write(ctx, name, gen)
		},
		check: func(ctx context.Context, rounds int64) error {
			// Every variant's first ConfigMap holds the last round's data
			// and kept what a child carries.
			for _, v := range vs {
				cm, err := cms.Get(ctx, v.name+"-0", metav1.GetOptions{})
				if err != nil {
					return err
				}
				if !item.DataEqual(cm.Data, spec(rounds)) || cm.Labels[child.LabelManagedBy] != "statuscost" || metav1.GetControllerOf(cm) == nil {
					return fmt.Errorf("variant %s: ConfigMap %s has data %v, labels %v, owner references %v; want the data of round %d, the label and the controller reference",
						v.name, cm.Name, cm.Data, cm.Labels, cm.OwnerReferences, rounds)
				}
			}
			return nil
		},
	}, nil
}

// spec is the Item spec of round gen.
func spec(gen int64) item.Spec {
	return item.Spec{Message: "m-" + strconv.FormatInt(gen, 10), Count: gen}
}
