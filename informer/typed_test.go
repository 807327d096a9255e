package informer

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/go-kit/log"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	restclientwatch "k8s.io/client-go/rest/watch"
)

// newTestCodec returns a codec of ConfigMaps that logs to logs and counts
// the objects it could not type in undecodable (nil: not counted).
func newTestCodec(logs *bytes.Buffer, undecodable *int) *typedCodec {
	if undecodable == nil {
		undecodable = new(int)
	}
	return newTypedCodec(reflect.TypeFor[corev1.ConfigMap](), log.NewLogfmtLogger(logs), func() { *undecodable++ })
}

const (
	goodCM = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"good","resourceVersion":"5"},"data":{"k":"v"}}`
	badCM  = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"bad"},"data":{"k":42},"binaryData":{"b":"c2VjcmV0LXZhbHVl"}}`
)

// TestTypedCodecLogsNoValue: an object whose field does not parse (a time
// that is not one) is left unstructured and logged with its key and the
// error; the decoder's error quotes the value, which must not reach the
// log (ConvertTo's rule).
func TestTypedCodecLogsNoValue(t *testing.T) {
	var logs bytes.Buffer
	c := newTestCodec(&logs, nil)
	obj, _, err := c.Decode([]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"namespace":"ns","name":"t","creationTimestamp":"secret-value"}}`), nil, nil)
	if _, ok := obj.(*unstructured.Unstructured); err != nil || !ok {
		t.Fatalf("Decode = %T, %v; want it unstructured and no error", obj, err)
	}
	if s := logs.String(); !strings.Contains(s, "object=ns/t") || !strings.Contains(s, "parsing time") || strings.Contains(s, "secret-value") {
		t.Fatalf("log = %q, want a warning naming ns/t and the error, without the value", s)
	}
}

func TestTypedCodecDecodesObjects(t *testing.T) {
	var logs bytes.Buffer
	var undecodable int
	c := newTestCodec(&logs, &undecodable)

	obj, gvk, err := c.Decode([]byte(goodCM), nil, nil)
	cm, ok := obj.(*corev1.ConfigMap)
	if err != nil || !ok || cm.Name != "good" || cm.Data["k"] != "v" || cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
		t.Fatalf("Decode(good) = %#v, %v; want the typed ConfigMap with its TypeMeta", obj, err)
	}
	if gvk == nil || gvk.Kind != "ConfigMap" {
		t.Errorf("Decode(good) kind = %v, want ConfigMap", gvk)
	}
	if logs.Len() != 0 {
		t.Errorf("logs after a good object: %q", logs.String())
	}

	obj, _, err = c.Decode([]byte(badCM), nil, nil)
	u, ok := obj.(*unstructured.Unstructured)
	if err != nil || !ok || u.GetName() != "bad" {
		t.Fatalf("Decode(bad) = %#v, %v; want it unstructured and no error", obj, err)
	}
	if !strings.Contains(logs.String(), "object=ns/bad") || !strings.Contains(logs.String(), "leaving it unstructured") {
		t.Errorf("logs = %q, want a warning naming ns/bad", logs.String())
	}
	if undecodable != 1 {
		t.Errorf("undecodable objects = %d after one bad object, want 1", undecodable)
	}
	if strings.Contains(logs.String(), "c2VjcmV0LXZhbHVl") {
		t.Errorf("logs = %q: the object's content leaked into them", logs.String())
	}

	obj, _, err = c.Decode([]byte(`{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Expired","code":410}`), nil, nil)
	if s, ok := obj.(*metav1.Status); err != nil || !ok || s.Reason != metav1.StatusReasonExpired || s.Code != 410 {
		t.Errorf("Decode(Status) = %#v, %v; want a *metav1.Status", obj, err)
	}

	if _, _, err := c.Decode([]byte(`{"metadata":{"name":"x"}}`), nil, nil); !runtime.IsMissingKind(err) {
		t.Errorf("Decode(no kind) error = %v, want a missing kind error", err)
	}
	if _, _, err := c.Decode([]byte(`not json`), nil, nil); err == nil {
		t.Error("Decode(not JSON) = nil error")
	}

	into := &metav1.Status{}
	obj, _, err = c.Decode([]byte(`{"apiVersion":"v1","kind":"Status","message":"gone"}`), nil, into)
	if err != nil || obj != into || into.Message != "gone" {
		t.Errorf("Decode(into) = %v, %v; want into filled", obj, err)
	}
}

func TestTypedCodecDecodesLists(t *testing.T) {
	var logs bytes.Buffer
	var undecodable int
	c := newTestCodec(&logs, &undecodable)
	list := `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{"resourceVersion":"9","continue":"next"},"items":[` +
		goodCM + `,` + badCM + `,` + strings.Replace(goodCM, `"good"`, `"other"`, 1) + `]}`
	obj, _, err := c.Decode([]byte(list), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	la, err := meta.ListAccessor(obj)
	if err != nil || la.GetResourceVersion() != "9" || la.GetContinue() != "next" {
		t.Fatalf("ListAccessor = %v, %v; want resourceVersion 9 and the continue token", la, err)
	}
	items, err := meta.ExtractList(obj)
	if err != nil || len(items) != 3 {
		t.Fatalf("ExtractList = %d items, %v; want 3", len(items), err)
	}
	var types []string
	for _, item := range items {
		types = append(types, reflect.TypeOf(item).String())
	}
	want := []string{"*v1.ConfigMap", "*unstructured.Unstructured", "*v1.ConfigMap"}
	if !reflect.DeepEqual(types, want) {
		t.Errorf("item types = %v, want %v", types, want)
	}
	if items[2].(*corev1.ConfigMap).Name != "other" {
		t.Errorf("third item = %v, want other", items[2])
	}

	// A built-in kind's list items carry no apiVersion and kind: the
	// list's give them theirs.
	bare := `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[{"metadata":{"name":"bare"}}]}`
	bareList, _, err := c.Decode([]byte(bare), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cm := bareList.(*typedList).Items[0].(*corev1.ConfigMap); cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Name != "bare" {
		t.Errorf("bare list item = %+v, want ConfigMap v1 bare", cm)
	}

	cp := obj.DeepCopyObject().(*typedList)
	cp.Items[0].(*corev1.ConfigMap).Data["k"] = "changed"
	cp.ResourceVersion = "10"
	if items[0].(*corev1.ConfigMap).Data["k"] != "v" || la.GetResourceVersion() != "9" {
		t.Error("DeepCopyObject shares the items or the list metadata with the original")
	}

	// An item that is not an object at all (no API server sends one) is
	// dropped, with a warning; the others stay.
	withJunk := `{"apiVersion":"v1","kind":"ConfigMapList","metadata":{},"items":[[1,2],` + goodCM + `]}`
	junkList, _, err := c.Decode([]byte(withJunk), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if items := junkList.(*typedList).Items; len(items) != 1 || items[0].(*corev1.ConfigMap).Name != "good" {
		t.Errorf("list with a junk item = %v, want only good", items)
	}
	if undecodable != 2 {
		t.Errorf("undecodable objects = %d after a bad item and a junk one, want 2", undecodable)
	}
	if !strings.Contains(logs.String(), "dropping it") {
		t.Errorf("logs = %q, want a warning about the dropped item", logs.String())
	}

	if _, _, err := c.Decode([]byte(`{"apiVersion":"v1","kind":"ConfigMapList","items":{}}`), nil, nil); err == nil {
		t.Error("Decode(list whose items are not an array) = nil error")
	}
}

func TestTypedCodecDecodesWatchEvents(t *testing.T) {
	var logs bytes.Buffer
	c := newTestCodec(&logs, nil)
	stream := `{"type":"ADDED","object":` + goodCM + "}\n" +
		`{"type":"MODIFIED","object":` + badCM + "}\n" +
		`{"type":"ERROR","object":{"apiVersion":"v1","kind":"Status","status":"Failure","reason":"Expired","code":410}}` + "\n"
	info := typedNegotiator{c}.SupportedMediaTypes()[0].StreamSerializer
	frames := info.Framer.NewFrameReader(nopCloser{strings.NewReader(stream)})
	d := restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.Serializer), c)
	defer d.Close()
	var got []string
	for range 3 {
		typ, obj, err := d.Decode()
		if err != nil {
			t.Fatalf("Decode after %v: %v", got, err)
		}
		got = append(got, string(typ)+" "+reflect.TypeOf(obj).String())
	}
	want := []string{string(watch.Added) + " *v1.ConfigMap", string(watch.Modified) + " *unstructured.Unstructured", string(watch.Error) + " *v1.Status"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}

type nopCloser struct{ *strings.Reader }

func (nopCloser) Close() error { return nil }

// BenchmarkTypedCodecDecode decodes one watch event's ConfigMap written
// with server-side apply (three managedFields entries), with the
// managedFields cut before decoding (drop) and decoded (keep), and the same
// ConfigMap as protobuf, the way the typed path reads built-in kinds, with
// the managedFields dropped by the informer's transform after decoding
// (protobuf).
func BenchmarkTypedCodecDecode(b *testing.B) {
	data := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"item-00042","namespace":"bench","uid":"0b7c3c1e-1111-2222-3333-444455556666","resourceVersion":"123456","creationTimestamp":"2026-11-23T20:00:00Z","labels":{"app.kubernetes.io/managed-by":"bench-readme","bench.operatorkit.io/item":"item-00042"},"managedFields":[` +
		mfEntry + `,` + mfEntry + `,` + mfEntry + `]},"data":{"value":"some data of the item 00042"}}`)
	for _, drop := range []bool{true, false} {
		name := map[bool]string{true: "drop", false: "keep"}[drop]
		b.Run(name, func(b *testing.B) {
			c := newTypedCodec(reflect.TypeFor[corev1.ConfigMap](), log.NewNopLogger(), func() {})
			c.dropManagedFields = drop
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := c.Decode(data, nil, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("protobuf", func(b *testing.B) {
		cm := &corev1.ConfigMap{}
		if err := json.Unmarshal(data, cm); err != nil || len(cm.ManagedFields) != 3 {
			b.Fatalf("decode the JSON: %v, %d managedFields", err, len(cm.ManagedFields))
		}
		gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
		n := kindNegotiator{scheme.Codecs.WithoutConversion(), gvk}
		info, _ := runtime.SerializerInfoForMediaType(n.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		pb, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), cm)
		if err != nil {
			b.Fatal(err)
		}
		dec := n.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
		b.ReportAllocs()
		for b.Loop() {
			obj, _, err := dec.Decode(pb, nil, nil)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := dropManagedFieldsTransform(obj); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func TestProtobufKind(t *testing.T) {
	type crd struct{ corev1.ConfigMap } // a custom type: not in client-go's scheme
	for _, tc := range []struct {
		name string
		gv   schema.GroupVersion
		obj  runtime.Object
		want bool
	}{
		{"ConfigMap in v1", corev1.SchemeGroupVersion, &corev1.ConfigMap{}, true},
		{"Deployment in apps/v1", appsv1.SchemeGroupVersion, &appsv1.Deployment{}, true},
		{"ConfigMap in apps/v1", appsv1.SchemeGroupVersion, &corev1.ConfigMap{}, false},
		{"a custom type", corev1.SchemeGroupVersion, &crd{}, false},
		{"unstructured", corev1.SchemeGroupVersion, &unstructured.Unstructured{}, false},
	} {
		gvk, ok := protobufKind(tc.gv, tc.obj)
		if ok != tc.want || (ok && gvk.GroupVersion() != tc.gv) {
			t.Errorf("%s: protobufKind() = %v, %v; want ok %v in %s", tc.name, gvk, ok, tc.want, tc.gv)
		}
	}
}

// TestKindDecoderKeepsKinds checks that objects and list items read as
// protobuf keep their apiVersion and kind, which the protobuf decoder of
// client-go's codecs clears.
func TestKindDecoderKeepsKinds(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("ConfigMap")
	n := kindNegotiator{scheme.Codecs.WithoutConversion(), gvk}
	info, ok := runtime.SerializerInfoForMediaType(n.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion)
	dec := n.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
	list := &corev1.ConfigMapList{Items: []corev1.ConfigMap{*cm, *cm}}
	for _, in := range []runtime.Object{cm, list} {
		data, err := runtime.Encode(enc, in)
		if err != nil {
			t.Fatal(err)
		}
		// The decoder under kindDecoder clears the kinds: the test's
		// premise.
		if raw, _, err := n.NegotiatedSerializer.DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion).Decode(data, nil, nil); err != nil || !raw.GetObjectKind().GroupVersionKind().Empty() {
			t.Fatalf("client-go's decoder gave %v, %v; want an object without kind", raw, err)
		}
		out, _, err := dec.Decode(data, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		switch o := out.(type) {
		case *corev1.ConfigMap:
			if o.GroupVersionKind() != gvk || o.Data["k"] != "v" {
				t.Errorf("decoded object: kind %v, data %v; want %v and the data", o.GroupVersionKind(), o.Data, gvk)
			}
		case *corev1.ConfigMapList:
			if k := o.GroupVersionKind(); k != corev1.SchemeGroupVersion.WithKind("ConfigMapList") {
				t.Errorf("decoded list: kind %v, want v1 ConfigMapList", k)
			}
			if len(o.Items) != 2 {
				t.Fatalf("decoded list has %d items, want 2", len(o.Items))
			}
			for i, item := range o.Items {
				if item.GroupVersionKind() != gvk || item.Name != "a" {
					t.Errorf("item %d: kind %v, name %q; want %v and a", i, item.GroupVersionKind(), item.Name, gvk)
				}
			}
		default:
			t.Fatalf("decoded %T", out)
		}
	}
}
