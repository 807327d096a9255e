package crud

import "reflect"

// Patch holds the changes that move the current state of a resource to the
// desired state, in up to three parts: a create, an update and a delete
// change. A [Resource] applies them in that order (create, update, delete),
// passing each part to ApplyCreateChange, ApplyUpdateChange and
// ApplyDeleteChange of its Ops; a part that is not set is not applied.
//
// A part is set when its setter was called with a value that is not nil:
// neither a nil interface nor a nil pointer, slice, map, channel, function
// or interface value. So SetCreateChange(toCreate) with a nil *ConfigMap or
// an empty nil slice leaves the create part unset, while an empty non-nil
// slice sets it. A later call to a setter replaces the earlier value; calling
// it with nil unsets the part.
//
// The zero value and NewPatch return an empty patch. The getters accept a nil
// *Patch, which has no part set. A Patch is not safe for concurrent use.
type Patch struct {
	create any
	update any
	delete any
}

// NewPatch returns an empty patch.
func NewPatch() *Patch { return &Patch{} }

// SetCreateChange sets the create part to create, or unsets it when create
// is nil (see [Patch]).
func (p *Patch) SetCreateChange(create any) { p.create = setValue(create) }

// SetUpdateChange sets the update part to update, or unsets it when update
// is nil (see [Patch]).
func (p *Patch) SetUpdateChange(update any) { p.update = setValue(update) }

// SetDeleteChange sets the delete part to delete, or unsets it when delete
// is nil (see [Patch]).
func (p *Patch) SetDeleteChange(delete any) { p.delete = setValue(delete) }

// CreateChange returns the create part and true, or nil and false when it is
// not set or p is nil.
func (p *Patch) CreateChange() (any, bool) {
	if p == nil {
		return nil, false
	}
	return p.create, p.create != nil
}

// UpdateChange returns the update part and true, or nil and false when it is
// not set or p is nil.
func (p *Patch) UpdateChange() (any, bool) {
	if p == nil {
		return nil, false
	}
	return p.update, p.update != nil
}

// DeleteChange returns the delete part and true, or nil and false when it is
// not set or p is nil.
func (p *Patch) DeleteChange() (any, bool) {
	if p == nil {
		return nil, false
	}
	return p.delete, p.delete != nil
}

// setValue returns v, or a nil interface when v holds a nil value of a kind
// that can be nil, so that "set" means "set to something".
func setValue(v any) any {
	if v == nil {
		return nil
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice, reflect.UnsafePointer:
		if rv.IsNil() {
			return nil
		}
	}
	return v
}
