package framework

import (
	"encoding"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/operatorkit/operatorkit/internal/statusfields"
)

// The status fields that resources set with statuscontext are written with
// the conditions, in the end-of-chain apply (statusRun.finish). The object's
// status is read for them only when a field is set, or when the apply
// carries over the fields the Framework wrote before: a reconciliation that
// sets none costs nothing more.

// setStatusMap makes the status of content, an unstructured object, the one
// the fields are compared with.
func (s *statusRun) setStatusMap(content map[string]any) {
	m, _ := content["status"].(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	s.statusMap, s.statusStruct, s.statusRead = m, reflect.Value{}, true
}

// readStatusView reads the object's status once: an unstructured object's
// map as it is; a typed object's Status struct, whose fields statusValue
// encodes one at a time; any other object converted to unstructured.
func (s *statusRun) readStatusView() {
	if s.statusRead {
		return
	}
	if u, ok := s.obj.(*unstructured.Unstructured); ok {
		s.setStatusMap(u.Object)
		return
	}
	v := reflect.ValueOf(s.obj)
	if v.Kind() == reflect.Pointer && !v.IsNil() && v.Elem().Kind() == reflect.Struct {
		if f, ok := statusStructField(v.Elem().Type()); ok {
			s.statusStruct, s.statusRead = v.Elem().Field(f.Index[0]), true
			return
		}
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(s.obj)
	if err != nil {
		content = nil // compared with nothing: every field set is written
	}
	s.setStatusMap(content)
}

// statusValue returns the object's status.<name> as decoded JSON, and
// whether the object has it. A typed object's field is encoded alone, so
// that a zero value its Go type omits (omitempty) compares equal to the
// same value set; a field the Go type does not have is absent.
func (s *statusRun) statusValue(name string) (any, bool) {
	s.readStatusView()
	if !s.statusStruct.IsValid() {
		v, ok := s.statusMap[name]
		return v, ok
	}
	fv, sf, found := fieldByJSONName(s.statusStruct, name)
	if !found || !fv.CanInterface() {
		// Not a field the Go type has (or one it cannot hand out): as the
		// whole status encodes it.
		v, ok := s.statusStructMap()[name]
		return v, ok
	}
	data, err := json.Marshal(addressOf(fv))
	if err != nil {
		return nil, false
	}
	if quoted(sf) && string(data) != "null" {
		// ",string": a scalar encoded in a JSON string, as the object
		// encodes it; decoded, that string is the scalar's JSON itself.
		return string(data), true
	}
	v, err := statusfields.Decode(data)
	if err != nil {
		return nil, false
	}
	return v, true
}

// addressOf returns a pointer to v when v has an address, v otherwise: as
// encoding/json encodes a field of an object given by its pointer, with
// the MarshalJSON of a pointer receiver too.
func addressOf(v reflect.Value) any {
	if v.CanAddr() {
		return v.Addr().Interface()
	}
	return v.Interface()
}

// statusFieldsHeld returns the fields the object's status holds, as decoded
// JSON (a typed object's non-empty ones).
func (s *statusRun) statusFieldsHeld() map[string]any {
	s.readStatusView()
	if s.statusStruct.IsValid() {
		return s.statusStructMap()
	}
	return s.statusMap
}

// statusStructMap returns a typed object's Status as decoded JSON (its
// fields that are not empty, when they are omitempty).
func (s *statusRun) statusStructMap() map[string]any {
	data, err := json.Marshal(addressOf(s.statusStruct))
	if err != nil {
		return nil
	}
	v, err := statusfields.Decode(data)
	if err != nil {
		return nil
	}
	m, _ := v.(map[string]any)
	return m
}

// fieldByJSONName returns the field of v, a struct, whose JSON name is
// name, as encoding/json finds it: a field of v's own, or else of a struct
// embedded in it without a JSON name (its fields are v's in JSON), the
// shallowest first; false when there is none, when two at the same depth
// have the name (encoding/json leaves both out), or when the embedded
// pointer that would hold it is nil.
func fieldByJSONName(v reflect.Value, name string) (reflect.Value, reflect.StructField, bool) {
	level := []reflect.Value{v}
	for depth := 0; len(level) > 0 && depth < 16; depth++ {
		var next []reflect.Value
		var found reflect.Value
		var foundField reflect.StructField
		n := 0
		for _, sv := range level {
			t := sv.Type()
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				tag := f.Tag.Get("json")
				if tag == "-" {
					continue
				}
				if tagName, _, _ := strings.Cut(tag, ","); f.Anonymous && tagName == "" {
					fv, ft := sv.Field(i), f.Type
					if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct {
						if fv.IsNil() {
							continue
						}
						fv, ft = fv.Elem(), ft.Elem()
					}
					if ft.Kind() == reflect.Struct {
						next = append(next, fv)
						continue
					}
				}
				if f.IsExported() && jsonName(f) == name {
					found, foundField, n = sv.Field(i), f, n+1
				}
			}
		}
		switch {
		case n == 1:
			return found, foundField, true
		case n > 1:
			return reflect.Value{}, reflect.StructField{}, false
		}
		level = next
	}
	return reflect.Value{}, reflect.StructField{}, false
}

// quoted reports whether encoding/json encodes field f, with the option
// ",string" of its tag, as a JSON string holding its JSON: a bool, a
// number or a string, not behind a MarshalJSON.
func quoted(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
	if !slices.Contains(strings.Split(opts, ","), "string") {
		return false
	}
	t := f.Type
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for _, m := range []reflect.Type{marshalerType, textMarshalerType} {
		if t.Implements(m) || reflect.PointerTo(t).Implements(m) {
			return false
		}
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.String:
		return true
	}
	return false
}

var (
	marshalerType     = reflect.TypeFor[json.Marshaler]()
	textMarshalerType = reflect.TypeFor[encoding.TextMarshaler]()
)

// fieldsChanged reports whether writing fields changes the object: a value
// that differs from the object's, or nil for a field the object has and
// the Framework owns (owned; nil when not known: any such field counts).
// An empty list or object and an absent (or null) field are the same.
func (s *statusRun) fieldsChanged(fields []statusfields.Field, owned map[string]bool) bool {
	for _, f := range fields {
		cur, ok := s.statusValue(f.Name)
		if f.JSON == nil {
			if ok && cur != nil && (owned == nil || owned[f.Name]) {
				return true
			}
			continue
		}
		if (!ok || cur == nil) && emptyJSON(f.JSON) {
			continue // a typed object's Go field cannot tell them apart
		}
		if !ok || !reflect.DeepEqual(cur, f.JSON) {
			return true
		}
	}
	return false
}

// emptyJSON reports whether v, decoded JSON, is an empty list or object.
func emptyJSON(v any) bool {
	switch v := v.(type) {
	case []any:
		return len(v) == 0
	case map[string]any:
		return len(v) == 0
	}
	return false
}

// holdsUnsetFields reports whether the object's status holds a field,
// other than the conditions and observedGeneration, that fields do not
// set to a value: one the apply carries over if the Framework owns it.
func (s *statusRun) holdsUnsetFields(fields []statusfields.Field) bool {
	for k := range s.statusFieldsHeld() {
		if statusfields.Reserved(k) {
			continue
		}
		set := false
		for _, f := range fields {
			if f.Name == k && f.JSON != nil {
				set = true
				break
			}
		}
		if !set {
			return true
		}
	}
	return false
}

// applyFields returns the status of the apply without its conditions and
// observedGeneration: the fields set to a value, and those the Framework
// owns and that are not set, with the object's value (server-side apply
// would remove a field its manager applied before and leaves out). A field
// set to nil is left out: removed, when the Framework owns it. carried
// reports whether a value was carried over: it is the object's as of s.rv,
// which the apply must then carry as its precondition (finish), or a value
// another writer changed since, and took from the Framework's manager,
// would be written back over the other writer's.
func (s *statusRun) applyFields(fields []statusfields.Field, owned map[string]bool) (status map[string]any, carried bool) {
	status = make(map[string]any, len(fields)+len(owned)+2)
	set := make(map[string]bool, len(fields))
	for _, f := range fields {
		set[f.Name] = true
		if f.JSON != nil {
			status[f.Name] = f.JSON
		}
	}
	for name := range owned {
		if set[name] {
			continue
		}
		if v, ok := s.statusValue(name); ok && v != nil {
			status[name], carried = v, true
		}
	}
	return status, carried
}

// ownedStatusFields returns the top-level status fields, other than the
// conditions and observedGeneration, that manager applied (server-side
// apply).
func ownedStatusFields(managed []metav1.ManagedFieldsEntry, manager string) map[string]bool {
	owned := map[string]bool{} // not nil: fieldsChanged takes nil for "not known"
	for _, e := range managed {
		if e.Manager != manager || e.Operation != metav1.ManagedFieldsOperationApply || e.FieldsV1 == nil {
			continue
		}
		var root struct {
			Status map[string]json.RawMessage `json:"f:status"`
		}
		if err := json.Unmarshal(e.FieldsV1.Raw, &root); err != nil {
			continue
		}
		for k := range root.Status {
			name, ok := strings.CutPrefix(k, "f:")
			if !ok || statusfields.Reserved(name) {
				continue
			}
			owned[name] = true
		}
	}
	return owned
}

// noteFieldOwners records in the Framework's state whether s.managed, the
// object's managedFields as the API server just answered them, tell that
// the Framework's field manager owns no status field but the conditions
// and observedGeneration (objectEntry.noFields); an answer without
// managedFields tells nothing.
func (s *statusRun) noteFieldOwners() {
	s.f.state.setOwnsNoFields(s.key, len(s.managed) > 0 && len(ownedStatusFields(s.managed, s.f.fieldManager)) == 0)
}

// refusedStatusFields returns the names of fields (those set to a value)
// that err, the API server's answer to the status apply, refuses: a value
// the CRD's schema rejects (422 Invalid, whose causes name the field), or a
// field, or a part of its value, that the schema does not declare
// (server-side apply fails to make its typed patch: "failed to create
// typed patch object (...): .status.<name>: field not declared in
// schema"). nil when err names none of them.
func refusedStatusFields(err error, fields []statusfields.Field) []string {
	var as apierrors.APIStatus
	if len(fields) == 0 || !errors.As(err, &as) {
		return nil
	}
	st := as.Status()
	var paths []string
	switch {
	case st.Code == http.StatusUnprocessableEntity && st.Details != nil:
		for _, c := range st.Details.Causes {
			paths = append(paths, c.Field)
		}
	case strings.Contains(st.Message, "typed patch object"):
		paths = append(paths, st.Message)
	}
	var names []string
	for _, f := range fields {
		if f.JSON == nil {
			continue
		}
		for _, p := range paths {
			if namesField(p, f.Name) {
				names = append(names, f.Name)
				break
			}
		}
	}
	return names
}

// namesField reports whether text holds the path of status.<name> or of a
// part of it ("status.nodes", ".status.nodes[0]", "status.endpoint.port:").
func namesField(text, name string) bool {
	for rest := text; ; {
		i := strings.Index(rest, "status."+name)
		if i < 0 {
			return false
		}
		before := i == 0 || strings.ContainsRune(" .:(", rune(rest[i-1]))
		rest = rest[i+len("status."+name):]
		if before && (rest == "" || strings.ContainsRune(".[:, ", rune(rest[0]))) {
			return true
		}
	}
}
