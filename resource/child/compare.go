package child

import (
	"bytes"
	"encoding"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file holds the comparison of a desired typed object with the current
// one, and the apply payload built from the desired object. Both walk the
// desired object with the same rules (see [Field] and the package
// documentation), so the fields compared are exactly the fields applied.

// maxFields bounds the fields one Change lists; the rest are counted.
const maxFields = 30

// segment is one segment of a field path: a field name, or a key (a map
// key or list merge key, kept as a value so that a walk formats nothing
// until it finds a difference), or a list index.
type segment struct {
	name  string
	key   reflect.Value
	index int
}

// pathString formats a path: "spec.template.spec.containers[web].image".
func pathString(path []segment) string {
	var b strings.Builder
	for _, p := range path {
		switch {
		case p.name != "":
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.name)
		case p.key.IsValid():
			b.WriteByte('[')
			b.WriteString(keyString(p.key))
			b.WriteByte(']')
		default:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(p.index))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// fieldInfo describes one JSON field of a struct type.
type fieldInfo struct {
	index     int
	name      string
	omitempty bool
	inline    bool
	// mergeKey is the JSON name of the patchMergeKey of a list of structs:
	// the list is compared element by element, matched by that key.
	mergeKey string
	// mergeSet is set for a list of scalars with patchStrategy merge (such
	// as finalizers): compared as a set.
	mergeSet bool
	// ownedMeta and skipTop cache ownedMeta[name] and skipTop[name], which
	// every comparison asks of every metadata and top-level field.
	ownedMeta, skipTop bool
}

type structInfo struct {
	fields []fieldInfo
	byName map[string]int // JSON name -> index in fields
	// owned are the indexes in fields of the ownedMeta fields, which are
	// all the comparison reads of metadata (meta).
	owned []int
	// metadata is the structInfo of the type of the field "metadata", set
	// by meta on first use, so that the comparison of every object does
	// not look it up again.
	metadata atomic.Pointer[structInfo]
}

var structInfos sync.Map // reflect.Type -> *structInfo

func infoOf(t reflect.Type) *structInfo {
	if v, ok := structInfos.Load(t); ok {
		return v.(*structInfo)
	}
	si := &structInfo{byName: map[string]int{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		fi := fieldInfo{index: i, name: name}
		for _, o := range strings.Split(opts, ",") {
			switch o {
			case "omitempty", "omitzero":
				fi.omitempty = true
			case "inline":
				fi.inline = true
			}
		}
		if ft := f.Type; name == "" && f.Anonymous {
			// Inlined as encoding/json does: an embedded struct (or
			// pointer to one); any other embedded type is a field named
			// after its type.
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			fi.inline = ft.Kind() == reflect.Struct
		}
		if fi.name == "" && !fi.inline {
			fi.name = f.Name
		}
		if strat := f.Tag.Get("patchStrategy"); strings.Contains(strat, "merge") {
			fi.mergeKey = f.Tag.Get("patchMergeKey")
			fi.mergeSet = fi.mergeKey == ""
		}
		fi.ownedMeta, fi.skipTop = ownedMeta[fi.name], skipTop[fi.name]
		if fi.ownedMeta {
			si.owned = append(si.owned, len(si.fields))
		}
		si.byName[fi.name] = len(si.fields)
		si.fields = append(si.fields, fi)
	}
	v, _ := structInfos.LoadOrStore(t, si)
	return v.(*structInfo)
}

var (
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

var leafTypes sync.Map // reflect.Type -> bool

// isLeaf reports whether values of struct type t are compared whole: types
// with their own JSON form (metav1.Time, resource.Quantity,
// intstr.IntOrString, runtime.RawExtension).
func isLeaf(t reflect.Type) bool {
	if v, ok := leafTypes.Load(t); ok {
		return v.(bool)
	}
	pt := reflect.PointerTo(t)
	leaf := t.Implements(jsonMarshaler) || pt.Implements(jsonMarshaler) || t.Implements(textMarshaler) || pt.Implements(textMarshaler)
	leafTypes.Store(t, leaf)
	return leaf
}

// isSet reports whether v, a field value (omitempty as tagged), appears in
// the apply payload: nil pointers, maps, slices and interfaces, empty maps
// and slices, zero values of types with their own JSON form, and zero
// omitempty scalars do not. A struct is set when any of its fields is; the
// walks find that out by walking it.
func isSet(v reflect.Value, omitempty bool) bool {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return false
		}
		// A pointer to a zero value is set (maxSurge: 0), unless the
		// value's own JSON form is null (a zero metav1.Time).
		if e := v.Elem(); e.Kind() == reflect.Struct && isLeaf(e.Type()) && e.IsZero() {
			return jsonValue(e.Interface()) != nil
		}
		return true
	case reflect.Interface:
		return !v.IsNil()
	case reflect.Map, reflect.Slice:
		return v.Len() > 0
	case reflect.Struct:
		if isLeaf(v.Type()) {
			return !v.IsZero()
		}
		return true
	}
	return !omitempty || !v.IsZero()
}

// emptyStruct reports whether v is a struct (not one with a JSON form of
// its own) of which no field is set: pointed to, it is applied as {}.
func emptyStruct(v reflect.Value) bool {
	return v.Kind() == reflect.Struct && !isLeaf(v.Type()) && payloadValue(v) == nil
}

// differ collects the differences between a desired and a current object.
type differ struct {
	path   []segment
	fields []Field
	more   int // differences beyond maxFields
	// any stops the walk at the first difference, for Matches-like checks.
	any bool
	// dropped are the paths at which the API server dropped an empty
	// struct the resource applied (nil: none): its absence there is no
	// difference.
	dropped *droppedPaths
	// emptyAbsent is set when the walk found a pointer to an empty struct
	// that current lacks (and dropped does not hold): the apply's answer
	// tells whether the API server keeps it (learn).
	emptyAbsent bool
	// learned, when not nil, makes the walk collect the paths of those
	// (shapeOf) instead of differences: the walk of learn.
	learned *[]string
}

func (d *differ) done() bool { return d.any && len(d.fields) > 0 }

func (d *differ) push(s segment) { d.path = append(d.path, s) }
func (d *differ) pop()           { d.path = d.path[:len(d.path)-1] }

func (d *differ) add(from, to reflect.Value) {
	if d.learned != nil {
		return
	}
	if len(d.fields) >= maxFields {
		d.more++
		return
	}
	d.fields = append(d.fields, Field{Path: pathString(d.path), From: show(from), To: show(to)})
}

func (d *differ) addString(key string, from *string, to string) {
	if d.learned != nil {
		return
	}
	if len(d.fields) >= maxFields {
		d.more++
		return
	}
	f := "(none)"
	if from != nil {
		f = show(reflect.ValueOf(*from))
	}
	d.push(segment{key: reflect.ValueOf(key)})
	d.fields = append(d.fields, Field{Path: pathString(d.path), From: f, To: show(reflect.ValueOf(to))})
	d.pop()
}

// walk compares desired (set) with current (invalid when absent) at
// d.path.
func (d *differ) walk(desired, current reflect.Value) {
	if d.done() {
		return
	}
	if current.IsValid() && (current.Kind() == reflect.Pointer || current.Kind() == reflect.Interface) && current.IsNil() {
		current = reflect.Value{}
	}
	switch desired.Kind() {
	case reflect.Pointer:
		if current.IsValid() {
			current = current.Elem()
		}
		if e := desired.Elem(); !current.IsValid() && emptyStruct(e) {
			// Pointed to, an empty struct is a value ({}: a podSelector
			// of every pod), which an absent one is not; unless the API
			// server dropped it here from an apply of this resource (a
			// Service's sessionAffinityConfig: {} under sessionAffinity
			// None): applied again, it would be dropped again.
			if d.dropped.has(d.path) {
				return
			}
			d.emptyAbsent = true
			if d.learned != nil {
				*d.learned = append(*d.learned, shapeOf(d.path))
			}
			d.add(current, desired)
			return
		}
		d.walk(desired.Elem(), current)
	case reflect.Struct:
		t := desired.Type()
		if isLeaf(t) {
			if !current.IsValid() || !equality.Semantic.DeepEqual(desired.Interface(), current.Interface()) {
				d.add(current, desired)
			}
			return
		}
		si := infoOf(t)
		for i := range si.fields {
			f := &si.fields[i]
			dv := desired.Field(f.index)
			if !isSet(dv, f.omitempty) {
				continue
			}
			var cv reflect.Value
			if current.IsValid() {
				cv = current.Field(f.index)
			}
			if f.inline {
				d.walk(dv, cv)
				continue
			}
			d.push(segment{name: f.name})
			if dv.Kind() == reflect.Slice && dv.Type().Elem().Kind() != reflect.Uint8 {
				d.list(f, dv, cv)
			} else {
				d.walk(dv, cv)
			}
			d.pop()
		}
	case reflect.Map:
		if dm, ok := desired.Interface().(map[string]string); ok {
			var cm map[string]string
			if current.IsValid() {
				cm = current.Interface().(map[string]string)
			}
			for k, v := range dm {
				cv, ok := cm[k]
				if !ok {
					d.addString(k, nil, v)
				} else if cv != v {
					d.addString(k, &cv, v)
				}
				if d.done() {
					return
				}
			}
			return
		}
		iter := desired.MapRange()
		for iter.Next() {
			dv := iter.Value()
			if !isSet(dv, false) {
				continue
			}
			var cv reflect.Value
			if current.IsValid() {
				cv = current.MapIndex(iter.Key())
			}
			d.push(segment{key: iter.Key()})
			d.walk(dv, cv)
			d.pop()
			if d.done() {
				return
			}
		}
	case reflect.Slice:
		if desired.Type().Elem().Kind() == reflect.Uint8 {
			if !current.IsValid() || !bytes.Equal(desired.Bytes(), current.Bytes()) {
				d.add(current, desired)
			}
			return
		}
		d.list(nil, desired, current)
	case reflect.Interface:
		if !current.IsValid() || !equality.Semantic.DeepEqual(desired.Interface(), current.Interface()) {
			d.add(current, desired)
		}
	default:
		if !current.IsValid() || !desired.Equal(current) {
			d.add(current, desired)
		}
	}
}

// list compares the list desired with current: by merge key, as a set, or
// whole (f is nil for a list inside a list or map: whole).
func (d *differ) list(f *fieldInfo, desired, current reflect.Value) {
	if current.IsValid() && current.IsNil() {
		current = reflect.Value{}
	}
	elem := desired.Type().Elem()
	structElem := elem.Kind() == reflect.Struct || (elem.Kind() == reflect.Pointer && elem.Elem().Kind() == reflect.Struct)
	if f != nil && f.mergeKey == "uid" && elem == ownerReferenceType && ownerReferencesMatch(desired, current) {
		// Every child's metadata.ownerReferences: no difference, found
		// without reflection. A difference takes the walk below, which
		// names it.
		return
	}
	switch {
	case f != nil && f.mergeKey != "" && structElem:
		st := elem
		if st.Kind() == reflect.Pointer {
			st = st.Elem()
		}
		ki, ok := infoOf(st).byName[f.mergeKey]
		if !ok {
			break
		}
		idx := infoOf(st).fields[ki].index
		var used []bool // made when current holds a key twice
		for i := range desired.Len() {
			de := reflect.Indirect(desired.Index(i))
			if !de.IsValid() {
				continue
			}
			key := de.Field(idx)
			var ce reflect.Value
			if current.IsValid() {
				ce = d.matchByKey(de, key, idx, current, &used)
			}
			d.push(segment{key: key})
			d.walk(de, ce)
			d.pop()
			if d.done() {
				return
			}
		}
		return
	case f != nil && f.mergeSet && !structElem:
		for i := range desired.Len() {
			de := desired.Index(i)
			found := false
			if current.IsValid() {
				for j := range current.Len() {
					if current.Index(j).Equal(de) {
						found = true
						break
					}
				}
			}
			if !found {
				d.push(segment{key: de})
				d.add(reflect.Value{}, de)
				d.pop()
			}
		}
		return
	}
	// Atomic: same length, each element compared as a subtree.
	if !current.IsValid() || current.Len() != desired.Len() {
		d.add(current, desired)
		return
	}
	for i := range desired.Len() {
		d.push(segment{index: i})
		d.walk(desired.Index(i), current.Index(i))
		d.pop()
		if d.done() {
			return
		}
	}
}

// matchByKey returns the element of the list current that the desired
// element de, whose merge key (field idx) is key, is compared with: the one
// with that key. The API server keys some of these lists on more than the
// merge key (a Service's ports on port and protocol, a container's on
// containerPort and protocol, topologySpreadConstraints on topologyKey and
// whenUnsatisfiable), so current may hold the key twice: then it is the
// first element not matched before that de finds no difference with, else
// the first not matched before (*used, made then, marks them). Whether de
// differs from an element is decided as d decides it, at d's path (an empty
// struct absent where the API server drops it is no difference).
func (d *differ) matchByKey(de, key reflect.Value, idx int, current reflect.Value, used *[]bool) reflect.Value {
	first, dup := -1, false
	for j := range current.Len() {
		c := reflect.Indirect(current.Index(j))
		if c.IsValid() && c.Field(idx).Equal(key) && (*used == nil || !(*used)[j]) {
			if first >= 0 {
				dup = true
				break
			}
			first = j
		}
	}
	if first < 0 {
		return reflect.Value{}
	}
	if !dup && *used == nil {
		return reflect.Indirect(current.Index(first))
	}
	if *used == nil {
		*used = make([]bool, current.Len())
	}
	pick := -1
	path := append(d.path[:len(d.path):len(d.path)], segment{key: key}) // the elements'
	for j := first; j < current.Len(); j++ {
		c := reflect.Indirect(current.Index(j))
		if !c.IsValid() || (*used)[j] || !c.Field(idx).Equal(key) {
			continue
		}
		if pick < 0 {
			pick = j
		}
		sub := differ{any: true, dropped: d.dropped, path: path}
		if sub.walk(de, c); len(sub.fields) == 0 {
			pick = j
			break
		}
	}
	(*used)[pick] = true
	return reflect.Indirect(current.Index(pick))
}

var ownerReferenceType = reflect.TypeFor[metav1.OwnerReference]()

// ownerReferencesMatch reports whether the walk of the owner references
// desired (a []metav1.OwnerReference, merged by uid) would find no
// difference with current (invalid when absent): each desired reference has
// a current one with its uid, equal in apiVersion, kind and name, and in
// controller and blockOwnerDeletion where the desired one sets them. It is
// the walk's rule for this one type, without reflection; false when either
// list is not addressable (the walk decides then).
func ownerReferencesMatch(desired, current reflect.Value) bool {
	if !desired.CanAddr() || (current.IsValid() && !current.CanAddr()) {
		return false
	}
	des := *(*[]metav1.OwnerReference)(desired.Addr().UnsafePointer())
	var cur []metav1.OwnerReference
	if current.IsValid() {
		cur = *(*[]metav1.OwnerReference)(current.Addr().UnsafePointer())
	}
	for i := range des {
		d := &des[i]
		var c *metav1.OwnerReference
		for j := range cur {
			if cur[j].UID == d.UID {
				c = &cur[j]
				break
			}
		}
		if c == nil || c.APIVersion != d.APIVersion || c.Kind != d.Kind || c.Name != d.Name ||
			!boolPtrMatches(d.Controller, c.Controller) || !boolPtrMatches(d.BlockOwnerDeletion, c.BlockOwnerDeletion) {
			return false
		}
	}
	return true
}

// boolPtrMatches reports whether the optional desired value is unset or
// equal to current.
func boolPtrMatches(desired, current *bool) bool {
	return desired == nil || (current != nil && *current == *desired)
}

func keyString(v reflect.Value) string {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if strings.ContainsAny(s, "[]. ") {
			return strconv.Quote(s)
		}
		return s
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(v.Int(), 10)
	}
	return fmt.Sprint(v.Interface())
}

// show formats a field value for a Field: "(none)" when absent, strings
// quoted (long ones shortened), other values as JSON.
func show(v reflect.Value) string {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return "(none)"
		}
		v = v.Elem()
	}
	if !v.IsValid() {
		return "(none)"
	}
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if len(s) > 60 {
			return fmt.Sprintf("%q… (%d bytes)", s[:40], len(s))
		}
		return strconv.Quote(s)
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Float32, reflect.Float64:
		return fmt.Sprint(v.Interface())
	}
	pv := payloadValue(v)
	if emptyStruct(v) {
		pv = map[string]any{} // pointed to (walk): {}
	}
	b, err := json.Marshal(pv)
	if err != nil {
		return fmt.Sprint(v.Interface())
	}
	if len(b) > 80 {
		return string(b[:70]) + fmt.Sprintf("… (%d bytes)", len(b))
	}
	return string(b)
}

// payloadValue returns the JSON value of v as the apply payload holds it
// (only set fields; nil when nothing of v is set).
func payloadValue(v reflect.Value) any {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface:
		if v.IsNil() {
			return nil
		}
		if e := v.Elem(); v.Kind() == reflect.Pointer && e.Kind() == reflect.Struct && isLeaf(e.Type()) {
			// Pointed to, a zero value is a value (maxSurge: 0, a zero
			// quantity), as encoding/json sends it.
			return jsonValue(e.Interface())
		}
		pv := payloadValue(v.Elem())
		if pv == nil && v.Kind() == reflect.Pointer && v.Elem().Kind() == reflect.Struct {
			// Pointed to, an empty struct is {} (podSelector: {}, every
			// pod), as encoding/json sends it; nil is no selector at all.
			return map[string]any{}
		}
		return pv
	case reflect.Struct:
		if isLeaf(v.Type()) {
			if v.IsZero() {
				return nil
			}
			return jsonValue(v.Interface())
		}
		m := map[string]any{}
		payloadStruct(v, m)
		if len(m) == 0 {
			return nil
		}
		return m
	case reflect.Map:
		if v.Len() == 0 {
			return nil
		}
		m := make(map[string]any, v.Len())
		iter := v.MapRange()
		for iter.Next() {
			if !isSet(iter.Value(), false) {
				continue
			}
			pv := payloadValue(iter.Value())
			if pv == nil {
				pv = map[string]any{}
			}
			m[fmt.Sprint(iter.Key().Interface())] = pv
		}
		return m
	case reflect.Slice:
		if v.Len() == 0 {
			return nil
		}
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return jsonValue(v.Interface()) // base64, as encoding/json
		}
		l := make([]any, v.Len())
		for i := range v.Len() {
			pv := payloadValue(v.Index(i))
			if pv == nil && reflect.Indirect(v.Index(i)).Kind() == reflect.Struct {
				pv = map[string]any{}
			}
			l[i] = pv
		}
		return l
	case reflect.String:
		return v.String()
	case reflect.Bool:
		return v.Bool()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int()
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return v.Uint()
	case reflect.Float32, reflect.Float64:
		return v.Float()
	}
	return jsonValue(v.Interface())
}

// payloadStruct adds the set fields of the struct v to m.
func payloadStruct(v reflect.Value, m map[string]any) {
	si := infoOf(v.Type())
	for i := range si.fields {
		f := &si.fields[i]
		fv := v.Field(f.index)
		if !isSet(fv, f.omitempty) {
			continue
		}
		if f.inline {
			if iv := reflect.Indirect(fv); iv.Kind() == reflect.Struct && !isLeaf(iv.Type()) {
				payloadStruct(iv, m)
			}
			continue
		}
		if pv := payloadValue(fv); pv != nil {
			m[f.name] = pv // an empty struct or map is not applied
		}
	}
}

// jsonValue returns x as encoding/json would encode and decode it into an
// any.
func jsonValue(x any) any {
	b, err := json.Marshal(x)
	if err != nil {
		return nil
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	return out
}

// sortFields orders fields by path, for stable output.
func sortFields(fs []Field) {
	slices.SortStableFunc(fs, func(a, b Field) int { return strings.Compare(a.Path, b.Path) })
}

// ownedMeta are the metadata fields a child's desired object may set and
// the resource compares and applies; the rest of metadata belongs to the
// API server. name and namespace identify the object and are applied, not
// compared.
var ownedMeta = map[string]bool{"labels": true, "annotations": true, "ownerReferences": true, "finalizers": true}

// skipTop are the top-level fields that are neither compared nor applied:
// status belongs to the object's controller, apiVersion and kind are set
// from the resource's GroupVersionKind.
var skipTop = map[string]bool{"status": true, "apiVersion": true, "kind": true, "metadata": true}

// diffObject compares the set fields of desired, a typed API object (a
// struct, not a pointer), with current (invalid when there is none). With
// first, it stops at the first difference.
func diffObject(desired, current reflect.Value, first bool) (fields []Field, more int) {
	fields, more, _ = diffChild(desired, current, first, nil)
	return fields, more
}

// diffChild is diffObject for a resource whose API server drops empty
// structs at the paths dropped (nil: none): their absence there is no
// difference. emptyAbsent reports a pointer to an empty struct that current
// lacks elsewhere (every one, for a create): the apply's answer is to be
// learnt from (learn).
func diffChild(desired, current reflect.Value, first bool, dropped *droppedPaths) (fields []Field, more int, emptyAbsent bool) {
	d := differs.Get().(*differ)
	d.any, d.dropped = first, dropped
	defer func() {
		d.path, d.fields, d.more, d.dropped, d.emptyAbsent = d.path[:0], nil, 0, nil, false
		differs.Put(d)
	}()
	d.object(desired, current)
	if len(d.fields) > 1 {
		sortFields(d.fields)
	}
	return d.fields, d.more, d.emptyAbsent
}

// object walks the object desired and current (invalid when there is
// none): the owned fields of metadata, and every other field but status,
// apiVersion and kind.
func (d *differ) object(desired, current reflect.Value) {
	si := infoOf(desired.Type())
	for i := range si.fields {
		f := &si.fields[i]
		if f.inline || f.skipTop {
			if f.name == "metadata" {
				d.meta(si, f, desired, current)
			}
			continue
		}
		d.field(f, desired, current)
	}
}

// maxDropped bounds the paths a resource records as dropped (see
// droppedPaths); past it, an empty struct the API server drops elsewhere is
// applied again in every reconciliation, as before there was a record.
const maxDropped = 32

// droppedPaths are the paths at which the API server dropped a pointer to
// an empty struct that a resource applied as {} and that its answer
// lacked (learn): a Service's spec.sessionAffinityConfig: {} while
// sessionAffinity is None, which the server's defaulting removes. The
// comparison does not count its absence there as drift: applied again, it
// would be dropped again, a write in every reconciliation. A path is
// recorded by its shape, field names with the elements of lists and maps
// as "[]" ("spec.template.spec.containers[].securityContext"): a set
// bounded by the desired type (and maxDropped), not by the children (whose
// names and merge keys are data), shared by every child of the resource.
// That is safe because what the API server does with {} at a field is the
// type's code (defaulting, or a webhook), not the child's name, and
// because the record only stops the absence of {} at that path from being
// drift: a value there that differs from a desired one is compared as
// ever, and so is {} at every other path (a NetworkPolicy peer's
// podSelector: {}, which the server keeps, is never recorded, so a peer
// turned into namespaceSelector: {} is drift). What it cannot see is {}
// removed by hand from a child on which the server would keep it, at a
// path where it dropped it from another child of the same resource (the
// code depending on other fields); no built-in kind is known to do both
// (a Service's sessionAffinityConfig under ClientIP is defaulted, never
// absent), and such a child gets its {} back with its next write. A
// record is not forgotten: the server drops {} there for as long as it
// runs the same code; after a change of that code (a CRD's schema that
// stops pruning the field) the absence stays hidden until the process
// restarts, or the child's next write brings the {} back.
type droppedPaths struct {
	mu    sync.Mutex // serialises add
	paths atomic.Pointer[[]string]
}

// has reports whether p (nil: none) holds the shape of path.
func (p *droppedPaths) has(path []segment) bool {
	if p == nil {
		return false
	}
	ps := p.paths.Load()
	if ps == nil {
		return false
	}
	for _, s := range *ps {
		if shapeIs(path, s) {
			return true
		}
	}
	return false
}

// add records the shapes, but those held and those beyond maxDropped.
func (p *droppedPaths) add(shapes []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ps []string
	if old := p.paths.Load(); old != nil {
		ps = *old
	}
	added := false
	for _, s := range shapes {
		if len(ps) >= maxDropped {
			break
		}
		if !slices.Contains(ps, s) {
			ps = append(slices.Clip(ps), s) // a new array: readers hold the old one
			added = true
		}
	}
	if added {
		p.paths.Store(&ps)
	}
}

// learn records in dropped the paths of the pointers to empty structs of
// desired (a struct value, as applied) that answer (the API server's
// answer to that apply) lacks, list elements matched as the comparison
// matches them: the server dropped them.
func learn(dropped *droppedPaths, desired, answer reflect.Value) {
	var shapes []string
	d := differ{dropped: dropped, learned: &shapes}
	d.object(desired, answer)
	if len(shapes) > 0 {
		dropped.add(shapes)
	}
}

// shapeOf formats path as pathString does, with every key and index as
// "[]": "spec.ingress[].from[].podSelector".
func shapeOf(path []segment) string {
	var b strings.Builder
	for _, p := range path {
		if p.name == "" {
			b.WriteString("[]")
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.name)
	}
	return b.String()
}

// shapeIs reports whether shapeOf(path) is s, without formatting path.
func shapeIs(path []segment, s string) bool {
	for i, p := range path {
		if p.name == "" {
			if !strings.HasPrefix(s, "[]") {
				return false
			}
			s = s[2:]
			continue
		}
		if i > 0 {
			if s == "" || s[0] != '.' {
				return false
			}
			s = s[1:]
		}
		if !strings.HasPrefix(s, p.name) {
			return false
		}
		s = s[len(p.name):]
	}
	return s == ""
}

// differs recycles differs, whose path stacks would otherwise be allocated
// by every comparison.
var differs = sync.Pool{New: func() any { return &differ{path: make([]segment, 0, 16)} }}

// meta compares the owned fields of the metadata field f of parent, the
// struct type of desired and current.
func (d *differ) meta(parent *structInfo, f *fieldInfo, desired, current reflect.Value) {
	dm := reflect.Indirect(desired.Field(f.index))
	var cm reflect.Value
	if current.IsValid() {
		cm = reflect.Indirect(current.Field(f.index))
	}
	d.push(segment{name: "metadata"})
	defer d.pop()
	si := parent.metadata.Load()
	if si == nil {
		si = infoOf(dm.Type())
		parent.metadata.Store(si)
	}
	for _, i := range si.owned {
		d.field(&si.fields[i], dm, cm)
	}
}

// field compares field f of the struct values desired and current (invalid
// when there is no current object), when desired sets it: lists but byte
// slices element by element, anything else as a value.
func (d *differ) field(f *fieldInfo, desired, current reflect.Value) {
	dv := desired.Field(f.index)
	if !isSet(dv, f.omitempty) {
		return
	}
	var cv reflect.Value
	if current.IsValid() {
		cv = current.Field(f.index)
	}
	d.push(segment{name: f.name})
	if dv.Kind() == reflect.Slice && dv.Type().Elem().Kind() != reflect.Uint8 {
		d.list(f, dv, cv)
	} else {
		d.walk(dv, cv)
	}
	d.pop()
}

// objectPayload returns the body of the server-side apply of desired (a
// struct value): apiVersion and kind, metadata's name, namespace and owned
// fields, and every other set field but status.
func objectPayload(desired reflect.Value, apiVersion, kind string) map[string]any {
	m := map[string]any{"apiVersion": apiVersion, "kind": kind}
	setPayload(m, desired, func(f *fieldInfo) bool { return !f.inline && !f.skipTop })
	si := infoOf(desired.Type())
	for i := range si.fields {
		if f := &si.fields[i]; f.name == "metadata" {
			meta := map[string]any{}
			setPayload(meta, reflect.Indirect(desired.Field(f.index)), func(mf *fieldInfo) bool {
				return mf.ownedMeta || mf.name == "name" || mf.name == "namespace"
			})
			m["metadata"] = meta
		}
	}
	return m
}

// setPayload puts into out the payload of every field of the struct value
// v that keep accepts and that is set.
func setPayload(out map[string]any, v reflect.Value, keep func(*fieldInfo) bool) {
	si := infoOf(v.Type())
	for i := range si.fields {
		f := &si.fields[i]
		if !keep(f) {
			continue
		}
		fv := v.Field(f.index)
		if !isSet(fv, f.omitempty) {
			continue
		}
		if pv := payloadValue(fv); pv != nil {
			out[f.name] = pv
		}
	}
}
