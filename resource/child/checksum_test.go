package child_test

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/operatorkit/operatorkit/resource/child"
	"github.com/operatorkit/operatorkit/resource/wrapper/retry"
)

// ExampleChecksum rolls a Deployment's pods when the Secret they read
// changes: the digest of its data goes into an annotation of the pod
// template. A label of the Secret is not its data.
func ExampleChecksum() {
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "demo", Name: "db"},
		Data: map[string][]byte{"password": []byte("one")}}
	template := func(s *corev1.Secret) corev1.PodTemplateSpec {
		sum, err := child.Checksum(s)
		if err != nil {
			panic(err)
		}
		return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{
			Annotations: map[string]string{"example.com/secret-checksum": sum}}}
	}
	before := template(secret)
	fmt.Println(before.Annotations["example.com/secret-checksum"])

	secret.Labels = map[string]string{"team": "db"}
	fmt.Println("label changed, pods roll:", template(secret).Annotations["example.com/secret-checksum"] != before.Annotations["example.com/secret-checksum"])
	secret.Data["password"] = []byte("two")
	fmt.Println("password changed, pods roll:", template(secret).Annotations["example.com/secret-checksum"] != before.Annotations["example.com/secret-checksum"])
	// Output:
	// 1f61cffd13ad36b250644c7e2e86f3e62269d6c9addfc6fd76802d9fdd5fb18c
	// label changed, pods roll: false
	// password changed, pods roll: true
}

func secretWith(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Data: data}
}

func configMapWith(data map[string]string, binary map[string][]byte) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}, Data: data, BinaryData: binary}
}

func checksum(t *testing.T, objs ...runtime.Object) string {
	t.Helper()
	sum, err := child.Checksum(objs...)
	if err != nil {
		t.Fatalf("Checksum() error = %v", err)
	}
	return sum
}

// TestChecksumStable: the digest does not depend on the order in which the
// maps were filled, nor on the process (a fixed value: a new encoding
// would roll every operator's pods on upgrade).
func TestChecksumStable(t *testing.T) {
	forward, backward := map[string][]byte{}, map[string][]byte{}
	forwardCM, backwardCM := map[string]string{}, map[string]string{}
	for i := range 100 {
		forward["k"+strconv.Itoa(i)] = []byte(strconv.Itoa(i))
		forwardCM["k"+strconv.Itoa(i)] = strconv.Itoa(i)
	}
	for i := 99; i >= 0; i-- {
		backward["k"+strconv.Itoa(i)] = []byte(strconv.Itoa(i))
		backwardCM["k"+strconv.Itoa(i)] = strconv.Itoa(i)
	}
	want := checksum(t, secretWith(forward), configMapWith(forwardCM, forward))
	for range 20 {
		if got := checksum(t, secretWith(backward), configMapWith(backwardCM, backward)); got != want {
			t.Fatalf("Checksum() = %s, then %s for the same data filled in another order", want, got)
		}
	}
	golden := map[string]struct {
		objs []runtime.Object
		want string
	}{
		"secret": {[]runtime.Object{secretWith(map[string][]byte{"password": []byte("one"), "user": []byte("admin")})},
			"f3d911169d967520e94155fc27fb400761ef100a7d9d7791d95eb064cca1986b"},
		"absent and configmap": {[]runtime.Object{nil, configMapWith(map[string]string{"a": "1"}, map[string][]byte{"b": {2}})},
			"66e5a7762880865eb893dec8593bedf3c9be8d4b0d31a568b34cb38dc09634b1"},
	}
	for name, g := range golden {
		if got := checksum(t, g.objs...); got != g.want {
			t.Errorf("%s: Checksum() = %s, want %s (the encoding changed: every operator's pods would roll)", name, got, g.want)
		}
	}
}

// TestChecksumDiffers: any change of the data, and an absent object
// against an empty one, changes the digest.
func TestChecksumDiffers(t *testing.T) {
	s := func(kv ...string) *corev1.Secret {
		data := map[string][]byte{}
		for i := 0; i < len(kv); i += 2 {
			data[kv[i]] = []byte(kv[i+1])
		}
		return secretWith(data)
	}
	tests := []struct {
		name string
		a, b []runtime.Object
	}{
		{"value changed", []runtime.Object{s("password", "one")}, []runtime.Object{s("password", "two")}},
		{"key renamed", []runtime.Object{s("password", "one")}, []runtime.Object{s("passwd", "one")}},
		{"key added", []runtime.Object{s("password", "one")}, []runtime.Object{s("password", "one", "user", "")}},
		{"empty value against no key", []runtime.Object{s()}, []runtime.Object{s("password", "")}},
		{"key and value boundary", []runtime.Object{s("ab", "c")}, []runtime.Object{s("a", "bc")}},
		{"entries against one", []runtime.Object{s("a", "1", "b", "2")}, []runtime.Object{s("a", "1\x01b\x012")}},
		{"absent against empty secret", []runtime.Object{nil}, []runtime.Object{s()}},
		{"absent secret against empty secret", []runtime.Object{(*corev1.Secret)(nil)}, []runtime.Object{s()}},
		{"absent configmap against empty configmap", []runtime.Object{(*corev1.ConfigMap)(nil)}, []runtime.Object{configMapWith(nil, nil)}},
		{"absent against nothing", []runtime.Object{nil}, nil},
		{"secret against configmap", []runtime.Object{s("a", "1")}, []runtime.Object{configMapWith(map[string]string{"a": "1"}, nil)}},
		{"data against binaryData", []runtime.Object{configMapWith(map[string]string{"a": "1"}, nil)}, []runtime.Object{configMapWith(nil, map[string][]byte{"a": []byte("1")})}},
		{"configmap value changed", []runtime.Object{configMapWith(map[string]string{"a": "1"}, nil)}, []runtime.Object{configMapWith(map[string]string{"a": "2"}, nil)}},
		{"binaryData value changed", []runtime.Object{configMapWith(nil, map[string][]byte{"a": {1}})}, []runtime.Object{configMapWith(nil, map[string][]byte{"a": {2}})}},
		{"order of objects", []runtime.Object{s("a", "1"), s("b", "2")}, []runtime.Object{s("b", "2"), s("a", "1")}},
		{"data moved between objects", []runtime.Object{s("a", "1"), s()}, []runtime.Object{s(), s("a", "1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := checksum(t, tt.a...), checksum(t, tt.b...); a == b {
				t.Errorf("Checksum() = %s for both", a)
			}
		})
	}
}

// TestChecksumEqual: what is not data, or the same data written another
// way, leaves the digest alone.
func TestChecksumEqual(t *testing.T) {
	labelled := secretWith(map[string][]byte{"a": []byte("1")})
	labelled.Labels, labelled.Annotations, labelled.ResourceVersion = map[string]string{"x": "y"}, map[string]string{"x": "y"}, "42"
	labelled.Type, labelled.Immutable = corev1.SecretTypeOpaque, new(bool)
	stringData := secretWith(map[string][]byte{"a": []byte("old")})
	stringData.StringData = map[string]string{"a": "1"}
	onlyStringData := &corev1.Secret{StringData: map[string]string{"a": "1"}}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(secretWith(map[string][]byte{"a": []byte("1")}))
	if err != nil {
		t.Fatal(err)
	}
	unstructuredSecret := &unstructured.Unstructured{Object: u}
	unstructuredSecret.SetAPIVersion("v1")
	unstructuredSecret.SetKind("Secret")
	u, err = runtime.DefaultUnstructuredConverter.ToUnstructured(configMapWith(map[string]string{"a": "1"}, map[string][]byte{"b": {2}}))
	if err != nil {
		t.Fatal(err)
	}
	unstructuredConfigMap := &unstructured.Unstructured{Object: u}
	unstructuredConfigMap.SetAPIVersion("v1")
	unstructuredConfigMap.SetKind("ConfigMap")
	tests := []struct {
		name string
		a, b []runtime.Object
	}{
		{"metadata, type and immutable", []runtime.Object{secretWith(map[string][]byte{"a": []byte("1")})}, []runtime.Object{labelled}},
		{"nil map against empty map", []runtime.Object{secretWith(nil)}, []runtime.Object{secretWith(map[string][]byte{})}},
		{"configmap nil maps against empty maps", []runtime.Object{configMapWith(nil, nil)}, []runtime.Object{configMapWith(map[string]string{}, map[string][]byte{})}},
		{"stringData over data", []runtime.Object{secretWith(map[string][]byte{"a": []byte("1")})}, []runtime.Object{stringData}},
		{"stringData alone", []runtime.Object{secretWith(map[string][]byte{"a": []byte("1")})}, []runtime.Object{onlyStringData}},
		{"unstructured secret", []runtime.Object{secretWith(map[string][]byte{"a": []byte("1")})}, []runtime.Object{unstructuredSecret}},
		{"unstructured configmap", []runtime.Object{configMapWith(map[string]string{"a": "1"}, map[string][]byte{"b": {2}})}, []runtime.Object{unstructuredConfigMap}},
		{"nil pointers are absent", []runtime.Object{nil, nil, nil}, []runtime.Object{(*corev1.Secret)(nil), (*corev1.ConfigMap)(nil), (*unstructured.Unstructured)(nil)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := checksum(t, tt.a...), checksum(t, tt.b...); a != b {
				t.Errorf("Checksum() = %s, then %s", a, b)
			}
		})
	}
	if stringData.Data["a"] == nil || string(stringData.Data["a"]) != "old" || onlyStringData.Data != nil {
		t.Errorf("Checksum changed the Secret: data = %q, %q", stringData.Data, onlyStringData.Data)
	}
}

// TestChecksumWrongType: an object without data to digest is a permanent
// error naming its position and type.
func TestChecksumWrongType(t *testing.T) {
	other := &unstructured.Unstructured{}
	other.SetAPIVersion("apps/v1")
	other.SetKind("Deployment")
	tests := []struct {
		obj  runtime.Object
		want string
	}{
		{&metav1.PartialObjectMetadata{}, "wrong object type: Checksum of object 1: digests Secrets and ConfigMaps, got a *v1.PartialObjectMetadata (a metadata-only informer's, which caches no data)"},
		{&appsv1.Deployment{}, "wrong object type: Checksum of object 1: digests Secrets and ConfigMaps, got a *v1.Deployment"},
		{other, "wrong object type: Checksum of object 1: digests Secrets and ConfigMaps, got an unstructured apps/v1, Kind=Deployment"},
	}
	for _, tt := range tests {
		sum, err := child.Checksum(secretWith(nil), tt.obj)
		if !errors.Is(err, child.ErrWrongType) || !retry.IsPermanent(err) || err.Error() != tt.want || sum != "" {
			t.Errorf("Checksum(%T) = %q, %v; want \"\", %q (ErrWrongType, permanent)", tt.obj, sum, err, tt.want)
		}
	}
}
