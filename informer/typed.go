package informer

import (
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/json"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	kjson "sigs.k8s.io/json"
)

// newTypedRESTClient returns a REST client for gv that decodes the objects
// it lists and watches straight into new values of objType's Go type.
//
// A built-in kind (protobufKind) is read as protobuf, as client-go's
// clientsets read it, unless cfg asks for another content type; the
// informer's transform drops its managedFields.
//
// Any other type is read as JSON, with no scheme: lists become a *typedList of them, "Status" documents a
// *metav1.Status. An object the Go type cannot hold (a value of the wrong
// type that no schema stopped) is decoded as an *unstructured.Unstructured
// instead, with a warning to logger naming it, so one bad object costs
// neither the list nor the watch. With dropManagedFields, each object's
// metadata.managedFields is cut from its JSON before it is decoded.
// objType must be a non-nil pointer to a struct.
func newTypedRESTClient(cfg *rest.Config, gv schema.GroupVersion, objType runtime.Object, dropManagedFields bool, logger log.Logger, undecodable func()) (rest.Interface, error) {
	t := reflect.TypeOf(objType)
	if t == nil || t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct || reflect.ValueOf(objType).IsNil() {
		return nil, fmt.Errorf("%w: Config.ObjectType must be a non-nil pointer to a struct, got %T", ErrInvalidConfig, objType)
	}
	if gvk, ok := protobufKind(gv, objType); ok && (cfg.ContentType == "" || cfg.ContentType == runtime.ContentTypeProtobuf) {
		return restClientFor(cfg, gv, kindNegotiator{scheme.Codecs.WithoutConversion(), gvk}, runtime.ContentTypeProtobuf)
	}
	codec := newTypedCodec(t.Elem(), logger, undecodable)
	codec.dropManagedFields = dropManagedFields
	return restClientFor(cfg, gv, typedNegotiator{codec}, runtime.ContentTypeJSON)
}

// protoUnmarshaler is the method the protobuf serializer decodes with; the
// Go types of built-in kinds have it, those of custom resources do not.
type protoUnmarshaler interface{ Unmarshal([]byte) error }

// protobufKind returns the kind of objType in group version gv when it is a
// built-in kind that the API server serves as protobuf: its Go type is in
// client-go's scheme under gv and decodes protobuf.
func protobufKind(gv schema.GroupVersion, objType runtime.Object) (schema.GroupVersionKind, bool) {
	if _, ok := objType.(protoUnmarshaler); !ok {
		return schema.GroupVersionKind{}, false
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(objType)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	for _, gvk := range gvks {
		if gvk.GroupVersion() == gv {
			return gvk, true
		}
	}
	return schema.GroupVersionKind{}, false
}

// kindNegotiator is client-go's codecs for built-in kinds (protobuf first,
// JSON accepted) with a decoder that keeps the apiVersion and kind of the
// objects of kind gvk and of their lists' items: the protobuf decoder
// clears them, the typed JSON path keeps them, and the cache holds objects
// that carry them whichever way they came.
type kindNegotiator struct {
	runtime.NegotiatedSerializer
	gvk schema.GroupVersionKind
}

func (n kindNegotiator) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return kindDecoder{Decoder: n.NegotiatedSerializer.DecoderToVersion(d, gv), gvk: n.gvk}
}

type kindDecoder struct {
	runtime.Decoder
	gvk schema.GroupVersionKind
}

func (d kindDecoder) Decode(data []byte, defaults *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	obj, gvk, err := d.Decoder.Decode(data, defaults, into)
	if err != nil || obj == nil || gvk == nil {
		return obj, gvk, err
	}
	switch {
	case *gvk == d.gvk:
		obj.GetObjectKind().SetGroupVersionKind(d.gvk)
	case gvk.GroupVersion() == d.gvk.GroupVersion() && gvk.Kind == d.gvk.Kind+"List":
		obj.GetObjectKind().SetGroupVersionKind(*gvk)
		err = meta.EachListItem(obj, func(item runtime.Object) error {
			item.GetObjectKind().SetGroupVersionKind(d.gvk)
			return nil
		})
	}
	return obj, gvk, err
}

// typedNegotiator serves typedCodec as the only (JSON) serializer, with
// no conversion.
type typedNegotiator struct{ codec *typedCodec }

func (n typedNegotiator) SupportedMediaTypes() []runtime.SerializerInfo {
	return []runtime.SerializerInfo{{
		MediaType:        runtime.ContentTypeJSON,
		MediaTypeType:    "application",
		MediaTypeSubType: "json",
		EncodesAsText:    true,
		Serializer:       n.codec,
		PrettySerializer: n.codec,
		StreamSerializer: &runtime.StreamSerializerInfo{EncodesAsText: true, Serializer: n.codec, Framer: json.Framer},
	}}
}

func (n typedNegotiator) EncoderForVersion(e runtime.Encoder, _ runtime.GroupVersioner) runtime.Encoder {
	return e
}

func (n typedNegotiator) DecoderToVersion(d runtime.Decoder, _ runtime.GroupVersioner) runtime.Decoder {
	return d
}

// typedCodec decodes JSON into one Go type and its lists (see
// newTypedRESTClient); it encodes with the JSON serializer.
type typedCodec struct {
	elem    reflect.Type // the struct type of the objects
	logger  log.Logger
	encoder runtime.Encoder
	// undecodable is called for each object cached unstructured or dropped.
	undecodable func()
	// dropManagedFields cuts metadata.managedFields out of each object's
	// JSON before decoding it (Config.DropManagedFields).
	dropManagedFields bool
}

func newTypedCodec(elem reflect.Type, logger log.Logger, undecodable func()) *typedCodec {
	return &typedCodec{elem: elem, logger: logger, undecodable: undecodable,
		encoder: json.NewSerializerWithOptions(json.DefaultMetaFactory, nil, nil, json.SerializerOptions{})}
}

func (c *typedCodec) Encode(obj runtime.Object, w io.Writer) error { return c.encoder.Encode(obj, w) }

func (c *typedCodec) Identifier() runtime.Identifier {
	return runtime.Identifier("operatorkit-typed-json-" + c.elem.String())
}

// Decode decodes data into into when it is given (a watch event's
// envelope, an error's Status), and otherwise by the document's kind: a
// Status, a list of objects, or one object, without its managedFields when
// the codec drops them.
func (c *typedCodec) Decode(data []byte, _ *schema.GroupVersionKind, into runtime.Object) (runtime.Object, *schema.GroupVersionKind, error) {
	if into != nil {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, into); err != nil {
			return nil, nil, err
		}
		gvk := into.GetObjectKind().GroupVersionKind()
		return into, &gvk, nil
	}
	if c.dropManagedFields {
		data = withoutManagedFields(data)
	}
	// The common document, an object of the Go type (every watch event's),
	// decodes once: its kind is read from the decoded TypeMeta instead of
	// a first pass over the whole document. A Status, a list, or a
	// document the Go type cannot hold takes the path below.
	if obj := reflect.New(c.elem).Interface().(runtime.Object); kjson.UnmarshalCaseSensitivePreserveInts(data, obj) == nil {
		if gvk := obj.GetObjectKind().GroupVersionKind(); c.ofElemType(gvk) {
			return obj, &gvk, nil
		}
	}
	gvk, err := json.DefaultMetaFactory.Interpret(data)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case gvk.Kind == "":
		return nil, gvk, runtime.NewMissingKindErr(string(data))
	case gvk.Kind == "Status" && gvk.Group == "":
		s := &metav1.Status{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(data, s); err != nil {
			return nil, gvk, err
		}
		return s, gvk, nil
	case strings.HasSuffix(gvk.Kind, "List") && gvk.Kind != c.elem.Name():
		l, err := c.decodeList(data)
		return l, gvk, err
	}
	obj := c.decodeObject(data)
	if obj == nil {
		return nil, gvk, fmt.Errorf("decode %s as %s: neither the Go type nor unstructured can hold it", gvk.Kind, c.elem)
	}
	return obj, gvk, nil
}

// ofElemType reports whether a document of kind gvk decodes into the Go
// type: it has a kind, and is neither a Status nor a list of another type.
func (c *typedCodec) ofElemType(gvk schema.GroupVersionKind) bool {
	switch {
	case gvk.Kind == "":
		return false
	case gvk.Kind == "Status" && gvk.Group == "":
		return false
	case strings.HasSuffix(gvk.Kind, "List") && gvk.Kind != c.elem.Name():
		return false
	}
	return true
}

// decodeObject decodes one object into a new value of the Go type, or,
// when the type cannot hold it, into an *unstructured.Unstructured; nil
// (logged, the error's quoted values cut out as ConvertTo does: a value
// that does not parse is quoted in it) when not even that can, which a list or watch of the API server
// never sends: Decode makes that an error, a list drops the item.
func (c *typedCodec) decodeObject(data []byte) runtime.Object {
	obj := reflect.New(c.elem).Interface().(runtime.Object)
	err := kjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	if err == nil {
		return obj
	}
	c.undecodable()
	u := &unstructured.Unstructured{}
	if uerr := u.UnmarshalJSON(data); uerr != nil {
		level.Warn(c.logger).Log("msg", "cannot decode object; dropping it", "type", "*"+c.elem.String(), "err", withoutValues(err))
		return nil
	}
	level.Warn(c.logger).Log("msg", "cannot decode object into its Go type; leaving it unstructured",
		"object", cache.NewObjectName(u.GetNamespace(), u.GetName()).String(), "type", "*"+c.elem.String(), "err", withoutValues(err))
	return u
}

// decodeList decodes a list document item by item, so that one item the Go
// type cannot hold stays unstructured and the others are typed.
func (c *typedCodec) decodeList(data []byte) (*typedList, error) {
	var raw struct {
		metav1.TypeMeta `json:",inline"`
		Metadata        metav1.ListMeta `json:"metadata"`
		Items           []rawJSON       `json:"items"`
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &raw); err != nil {
		return nil, err
	}
	l := &typedList{TypeMeta: raw.TypeMeta, ListMeta: raw.Metadata, Items: make([]runtime.Object, 0, len(raw.Items))}
	// The items of a built-in kind's list carry no apiVersion and kind; the
	// cache's objects carry them whether they came from a list or a watch.
	itemKind := raw.GroupVersionKind()
	itemKind.Kind = strings.TrimSuffix(itemKind.Kind, "List")
	for _, item := range raw.Items {
		if c.dropManagedFields {
			item = withoutManagedFields(item)
		}
		obj := c.decodeObject(item)
		if obj == nil {
			continue
		}
		if k := obj.GetObjectKind(); k.GroupVersionKind().Empty() {
			k.SetGroupVersionKind(itemKind)
		}
		l.Items = append(l.Items, obj)
	}
	return l, nil
}

// rawJSON keeps a list item's bytes for decodeObject, sharing the list's
// buffer where the decoder allows.
type rawJSON []byte

func (r *rawJSON) UnmarshalJSON(b []byte) error {
	*r = b
	return nil
}

// typedList is a list of objects decoded by typedCodec: typed ones and,
// rarely, unstructured ones. meta.ExtractList and meta.ListAccessor read it
// as they read a clientset's lists.
type typedList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata"`
	Items           []runtime.Object `json:"items"`
}

// DeepCopyObject implements runtime.Object.
func (l *typedList) DeepCopyObject() runtime.Object {
	out := &typedList{TypeMeta: l.TypeMeta}
	l.ListMeta.DeepCopyInto(&out.ListMeta)
	if l.Items != nil {
		out.Items = make([]runtime.Object, len(l.Items))
		for i, item := range l.Items {
			out.Items[i] = item.DeepCopyObject()
		}
	}
	return out
}
