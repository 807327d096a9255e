package informer

import (
	"fmt"
	"reflect"
	"regexp"

	"github.com/go-kit/log"
	"github.com/go-kit/log/level"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"

	"github.com/operatorkit/operatorkit/internal/nilptr"
)

// ConvertTo returns a Config.Transform for an informer with a dynamic
// Client: it converts each *unstructured.Unstructured into a new T (a
// pointer to the Go type of the resource, such as the *WebApp of a custom
// resource) with runtime.DefaultUnstructuredConverter, once per event, so
// that the Framework's resources receive typed objects without a
// conversion per reconciliation. apiVersion and kind are kept in T's
// TypeMeta.
//
// An object that does not convert (possible only when the API server
// enforces no schema that fits T) stays unstructured, and a warning naming
// its key and the error (with the values it quotes cut out), never its
// content, goes to logger (nil, or a nil pointer: no log);
// the resources then meet an object of an unexpected type. The transform
// never returns an error, which would make client-go list and watch again,
// forever, and never panics. Objects that are not unstructured pass
// unchanged. ConvertTo panics if T is not a pointer to a struct. New
// refuses it on a metadata-only informer (ObjectType
// &metav1.PartialObjectMetadata{}), whose objects it could not convert.
func ConvertTo[T runtime.Object](logger log.Logger) cache.TransformFunc {
	t := reflect.TypeFor[T]()
	if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("informer.ConvertTo: %s is not a pointer to a struct", t))
	}
	if nilptr.Is(logger) { // nor a nil pointer in the interface
		logger = log.NewNopLogger()
	}
	f := cache.TransformFunc(func(obj any) (any, error) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok || u == nil {
			return obj, nil
		}
		typed, err := convert(u, t.Elem())
		if err != nil {
			level.Warn(logger).Log("msg", "cannot convert object; leaving it unstructured", "object", cache.NewObjectName(u.GetNamespace(), u.GetName()).String(), "type", t.String(), "err", withoutValues(err))
			return u, nil
		}
		return typed, nil
	})
	convertToCode.Store(reflect.ValueOf(f).Pointer(), struct{}{})
	return f
}

// quoted matches a double-quoted string in an error message, escapes
// included.
var quoted = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)

// withoutValues returns err's message with its double-quoted strings
// replaced by "…": the converter quotes the value it could not parse
// (parsing time "<value>"), which must not reach the log.
func withoutValues(err error) string {
	return quoted.ReplaceAllLiteralString(err.Error(), `"…"`)
}

// convert returns u as a new object of type t, turning a panic of the
// converter (on values that did not come from JSON) into an error.
func convert(u *unstructured.Unstructured, t reflect.Type) (obj any, err error) {
	defer func() {
		if r := recover(); r != nil {
			obj, err = nil, fmt.Errorf("convert to %s: %v", t, r)
		}
	}()
	v := reflect.New(t).Interface()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, v); err != nil {
		return nil, err
	}
	return v, nil
}
