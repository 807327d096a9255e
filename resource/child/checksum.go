package child

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// Checksum returns a digest of the data of the Secrets and ConfigMaps that
// a desired child's pods read, to put in an annotation of the child's pod
// template, so that a change of that data rolls the pods (a Deployment's
// rollout; a CronJob's next Jobs): the "checksum/config" annotation of Helm
// charts. Desired reads the referenced objects from their informer
// (informer.Get), and operator.Operator.References wakes the owner when
// one of them changes:
//
//	secret, ok, err := informer.Get[*corev1.Secret](secrets, b.Namespace, b.Spec.SecretName)
//	...
//	sum, err := child.Checksum(secret)
//	...
//	template.Annotations = map[string]string{"backup.example.com/secret-checksum": sum}
//
// Name the annotation in your operator's domain, one per pod template (one
// Checksum of all the objects its pods read), and set it on the pod
// template (spec.template.metadata, or a CronJob's
// spec.jobTemplate.spec.template.metadata), not on the child's own
// metadata, which rolls nothing.
//
// What is digested, object by object in the order given (the order is part
// of the digest: keep it fixed):
//
//   - a *corev1.Secret: its data, with stringData's values over data's, as
//     the API server stores them (so a desired Secret built with stringData
//     and the cached Secret it becomes have one digest);
//   - a *corev1.ConfigMap: its data and binaryData, each on its own (a key
//     moved from one to the other changes the digest);
//   - an *unstructured.Unstructured of apiVersion v1 and kind Secret or
//     ConfigMap (a dynamic informer's): converted, then as above;
//   - nil (or a nil *corev1.Secret, *corev1.ConfigMap or
//     *unstructured.Unstructured): an absent object, for an optional
//     reference that does not exist. It differs from an object without
//     data, so the pods roll when the object appears, even empty.
//
// Within an object, keys are digested in sorted order (the digest is
// stable across map order and processes), each key with its value and
// their lengths, so a key added, removed or renamed, or a value changed
// (also to or from the empty value), changes the digest; a nil map and an
// empty one, which the API server does not tell apart, digest alike.
// Metadata (name, labels, annotations, resourceVersion), a Secret's type
// and immutable are not digested: a label change does not roll the pods.
//
// The digest is the SHA-256, in hex (64 characters), of that encoding. It
// does not show the data, but whoever can read the pod template (a
// Deployment's readers, who may not be allowed to read the Secret) can test
// guesses of it offline: a Secret whose every value is a guessable one
// (a short password, alone) is exposed that way; a random value among
// the data makes the digest unguessable.
//
// Any other object (a *metav1.PartialObjectMetadata of a metadata-only
// informer, which caches no data, or another kind) is an error matching
// [ErrWrongType], marked retry.Permanent, that names its position and type.
func Checksum(objs ...runtime.Object) (string, error) {
	h := sha256.New()
	for i, obj := range objs {
		if err := digest(h, obj); err != nil {
			return "", retry.Permanent(fmt.Errorf("%w: Checksum of object %d: %w", ErrWrongType, i, err))
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// Tags of the encoding that Checksum digests: one byte before each object,
// and before each of a ConfigMap's maps.
const (
	tagAbsent     = 0
	tagSecret     = 's'
	tagConfigMap  = 'c'
	tagBinaryData = 'b'
)

// digest writes the encoding of obj to h (see Checksum).
func digest(h hash.Hash, obj runtime.Object) error {
	switch o := obj.(type) {
	case nil:
		h.Write([]byte{tagAbsent})
	case *corev1.Secret:
		if o == nil {
			h.Write([]byte{tagAbsent})
			return nil
		}
		h.Write([]byte{tagSecret})
		data := o.Data
		if len(o.StringData) > 0 {
			data = maps.Clone(o.Data)
			if data == nil {
				data = make(map[string][]byte, len(o.StringData))
			}
			for k, v := range o.StringData {
				data[k] = []byte(v)
			}
		}
		digestMap(h, data)
	case *corev1.ConfigMap:
		if o == nil {
			h.Write([]byte{tagAbsent})
			return nil
		}
		h.Write([]byte{tagConfigMap})
		digestMap(h, o.Data)
		h.Write([]byte{tagBinaryData})
		digestMap(h, o.BinaryData)
	case *unstructured.Unstructured:
		if o == nil {
			h.Write([]byte{tagAbsent})
			return nil
		}
		var typed runtime.Object
		switch gvk := o.GroupVersionKind(); {
		case gvk == corev1.SchemeGroupVersion.WithKind("Secret"):
			typed = &corev1.Secret{}
		case gvk == corev1.SchemeGroupVersion.WithKind("ConfigMap"):
			typed = &corev1.ConfigMap{}
		default:
			return fmt.Errorf("digests Secrets and ConfigMaps, got an unstructured %s", gvk)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, typed); err != nil {
			return fmt.Errorf("convert %s %s: %w", o.GetKind(), o.GetName(), err)
		}
		return digest(h, typed)
	case *metav1.PartialObjectMetadata:
		return fmt.Errorf("digests Secrets and ConfigMaps, got a %T (a metadata-only informer's, which caches no data)", obj)
	default:
		return fmt.Errorf("digests Secrets and ConfigMaps, got a %T", obj)
	}
	return nil
}

// digestMap writes the number of entries of m, then each key and its
// value, in the order of the keys, each preceded by its length.
func digestMap[V string | []byte](h hash.Hash, m map[string]V) {
	var n [binary.MaxVarintLen64]byte
	h.Write(binary.AppendUvarint(n[:0], uint64(len(m))))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		h.Write(binary.AppendUvarint(n[:0], uint64(len(k))))
		h.Write([]byte(k))
		h.Write(binary.AppendUvarint(n[:0], uint64(len(m[k]))))
		h.Write([]byte(m[k]))
	}
}
