package informer

import (
	"encoding/json"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kjson "sigs.k8s.io/json"
)

const mfEntry = `{"manager":"op","operation":"Apply","apiVersion":"v1","time":"2026-11-23T20:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k":{}},"f:metadata":{"f:labels":{"f:a\"}{":{}}}}}`

func TestWithoutManagedFields(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"middle", `{"kind":"ConfigMap","metadata":{"name":"a","managedFields":[` + mfEntry + `],"uid":"u"},"data":{"k":"v"}}`,
			`{"kind":"ConfigMap","metadata":{"name":"a","uid":"u"},"data":{"k":"v"}}`},
		{"first", `{"metadata":{"managedFields":[` + mfEntry + `,` + mfEntry + `],"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{"last", `{"metadata":{"name":"a","managedFields":[]}}`, `{"metadata":{"name":"a"}}`},
		{"only", `{"metadata":{"managedFields":null}}`, `{"metadata":{}}`},
		{"white space", "{ \"apiVersion\" : \"v1\" ,\n \"metadata\" : { \"name\" : \"a\" ,\n \"managedFields\" : [ ] \n } }", "{ \"apiVersion\" : \"v1\" ,\n \"metadata\" : { \"name\" : \"a\"  \n } }"},
		{"metadata after other members", `{"spec":{"metadata":{"managedFields":1},"x":[1,{"a":"}"}]},"n":-1.5e3,"b":true,"metadata":{"managedFields":[` + mfEntry + `]}}`,
			`{"spec":{"metadata":{"managedFields":1},"x":[1,{"a":"}"}]},"n":-1.5e3,"b":true,"metadata":{}}`},
		{"none", `{"metadata":{"name":"a"}}`, `{"metadata":{"name":"a"}}`},
		{"not in metadata", `{"spec":{"managedFields":[]},"metadata":{"name":"a"}}`, `{"spec":{"managedFields":[]},"metadata":{"name":"a"}}`},
		{"escaped key is left alone", `{"metadata":{"managed\u0046ields":[]}}`, `{"metadata":{"managed\u0046ields":[]}}`},
		{"truncated", `{"metadata":{"name":"a","managedFields":[{"manager":"op"`, `{"metadata":{"name":"a","managedFields":[{"manager":"op"`},
		{"not an object", `["metadata"]`, `["metadata"]`},
		{"empty", ``, ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.in)
			if got := string(withoutManagedFields(in)); got != tt.want {
				t.Errorf("withoutManagedFields(%s) =\n%s\nwant\n%s", tt.in, got, tt.want)
			}
			if string(in) != tt.in {
				t.Errorf("withoutManagedFields modified its input: %s", in)
			}
		})
	}
}

// TestTypedCodecDropsManagedFields decodes an object with managedFields
// into the same ConfigMap, without them, as the full decode then dropping.
func TestTypedCodecDropsManagedFields(t *testing.T) {
	data := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"ns","labels":{"x":"y"},"managedFields":[` + mfEntry + `],"resourceVersion":"3"},"data":{"k":"v"}}`)
	var want corev1.ConfigMap
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &want); err != nil {
		t.Fatal(err)
	}
	if len(want.ManagedFields) != 1 {
		t.Fatalf("fixture has %d managedFields, want 1", len(want.ManagedFields))
	}
	want.ManagedFields = nil
	c := newTypedCodec(reflect.TypeFor[corev1.ConfigMap](), nil, func() {})
	c.dropManagedFields = true
	got, _, err := c.Decode(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, &want) {
		t.Errorf("Decode = %+v, want %+v", got, &want)
	}
}

// FuzzWithoutManagedFields: whatever the input, the function does not
// panic or modify it, and when it changes a JSON object, the result is that
// object without metadata.managedFields and nothing else.
func FuzzWithoutManagedFields(f *testing.F) {
	f.Add(`{"kind":"ConfigMap","metadata":{"name":"a","managedFields":[` + mfEntry + `],"uid":"u"},"data":{"k":"v"}}`)
	f.Add(`{"metadata":{"managedFields":null}}`)
	f.Add(`{"a":"\"}","metadata":{"x":[{"y":"]"}],"managedFields":{}}}`)
	f.Add(`{"metadata":{"managedFields":[}}`)
	f.Fuzz(func(t *testing.T, in string) {
		data := []byte(in)
		out := withoutManagedFields(data)
		if string(data) != in {
			t.Fatal("input modified")
		}
		if string(out) == in {
			return
		}
		var whole, cut map[string]any
		if err := json.Unmarshal(data, &whole); err != nil {
			return // the decoder rejects the input anyway
		}
		if err := json.Unmarshal(out, &cut); err != nil {
			t.Fatalf("withoutManagedFields(%q) = %q, not JSON: %v", in, out, err)
		}
		md, ok := whole["metadata"].(map[string]any)
		if !ok {
			t.Fatalf("withoutManagedFields(%q) = %q changed an object without a metadata object", in, out)
		}
		delete(md, "managedFields")
		if !reflect.DeepEqual(whole, cut) {
			t.Fatalf("withoutManagedFields(%q) = %q, want only metadata.managedFields removed", in, out)
		}
		if len(out) >= len(in) {
			t.Fatal("output not shorter than input")
		}
	})
}
