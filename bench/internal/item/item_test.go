package item

import (
	"encoding/json"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
)

func TestDataEqual(t *testing.T) {
	spec := Spec{Message: "m", Count: 42}
	tests := []struct {
		name string
		data map[string]string
		want bool
	}{
		{name: "derived", data: Data(spec), want: true},
		{name: "nil", data: nil, want: false},
		{name: "other message", data: map[string]string{"message": "x", "count": "42"}, want: false},
		{name: "other count", data: map[string]string{"message": "m", "count": "41"}, want: false},
		{name: "bad count", data: map[string]string{"message": "m", "count": "x"}, want: false},
		{name: "extra key", data: map[string]string{"message": "m", "count": "42", "x": ""}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DataEqual(tt.data, spec); got != tt.want {
				t.Fatalf("DataEqual(%v) = %v, want %v", tt.data, got, tt.want)
			}
		})
	}
}

func TestSchemeRoundTrip(t *testing.T) {
	s := runtime.NewScheme()
	if err := AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	factory := serializer.NewCodecFactory(s)
	codecs := factory.WithoutConversion()
	in := &Item{Spec: Spec{Message: "m", Count: 1}, Status: Status{ObservedGeneration: 3, Conditions: []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Reason: "R", LastTransitionTime: metav1.Unix(10, 0)}}}}
	in.Name, in.Namespace, in.Finalizers = "a", "ns", []string{"f"}
	info, _ := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeJSON)
	b, err := runtime.Encode(codecs.EncoderForVersion(info.Serializer, GroupVersion), in)
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	if raw["apiVersion"] != GroupVersion.String() || raw["kind"] != Kind {
		t.Fatalf("encoded type meta = %v %v", raw["apiVersion"], raw["kind"])
	}
	out, _, err := factory.UniversalDeserializer().Decode(b, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*Item)
	if got.Spec != in.Spec || !reflect.DeepEqual(got.Status, in.Status) || got.Finalizers[0] != "f" {
		t.Fatalf("round trip = %+v", got)
	}
	cp := got.DeepCopy()
	cp.Finalizers[0] = "changed"
	if got.Finalizers[0] != "f" {
		t.Fatal("DeepCopy shares the finalizers slice")
	}
	cp.Status.Conditions[0].Reason = "changed"
	if got.Status.Conditions[0].Reason != "R" {
		t.Fatal("DeepCopy shares the conditions slice")
	}
}

func TestConfigMap(t *testing.T) {
	it := &Item{Spec: Spec{Message: "m", Count: 2}}
	it.Name, it.Namespace, it.UID = "a", "ns", "u"
	cm := ConfigMap(it)
	if cm.Name != "a" || cm.Namespace != "ns" || cm.Labels[LabelItem] != "a" || !DataEqual(cm.Data, it.Spec) {
		t.Fatalf("ConfigMap = %+v", cm)
	}
	if ref := cm.OwnerReferences[0]; ref.UID != "u" || ref.Kind != Kind || !*ref.Controller {
		t.Fatalf("owner reference = %+v", ref)
	}
}
