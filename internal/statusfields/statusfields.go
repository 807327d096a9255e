// Package statusfields implements the status fields of one reconciliation
// behind package context/statuscontext: a Store, held in a context under
// ctxkey.StatusFields. It is a package of its own so that the Framework can
// keep a Store in its own per-reconciliation state and answer the key itself
// (no context layer and no allocation of their own), as it does for the
// conditions.
package statusfields

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/operatorkit/operatorkit/internal/ctxkey"
)

// ErrInvalidField is matched by the error of a field that cannot be written:
// a name that is empty, holds a dot or is one of the Framework's own
// fields, or a value that does not encode to JSON.
var ErrInvalidField = errors.New("invalid status field")

// Field is one status field as set in a reconciliation.
type Field struct {
	// Name is the field's name in status ("nodes" for status.nodes).
	Name string
	// Value is the value as set.
	Value any
	// JSON is Value as decoded JSON, in the form of an unstructured
	// object (map[string]any, []any, string, int64, float64, bool); nil
	// for a nil Value, which removes the field.
	JSON any
	// Err is set when the field cannot be written; it matches
	// ErrInvalidField and names the field.
	Err error
}

// Store is the status fields of one reconciliation. The zero value is an
// empty store. Its methods are safe for concurrent use.
type Store struct {
	mu     sync.Mutex
	fields []Field // in the order first set
}

// From returns the store ctx holds, nil when it holds none.
func From(ctx context.Context) *Store {
	s, _ := ctx.Value(ctxkey.StatusFields{}).(*Store)
	return s
}

// Set records value for the field name, replacing the value set before. It
// encodes value to JSON at once (a later change of the caller's value does
// not change what is written), and records why it cannot be written, if so.
func (s *Store) Set(name string, value any) {
	f := Field{Name: name, Value: value}
	f.JSON, f.Err = check(name, value)
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.fields {
		if s.fields[i].Name == name {
			s.fields[i] = f
			return
		}
	}
	s.fields = append(s.fields, f)
}

// Invalidate records err, which must match ErrInvalidField, as the reason
// the field name cannot be written; a field not set is left alone.
func (s *Store) Invalidate(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.fields {
		if s.fields[i].Name == name {
			s.fields[i].Err = err
			return
		}
	}
}

// Get returns the value of the field name as last set.
func (s *Store) Get(name string) (any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, f := range s.fields {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// Len returns the number of fields set.
func (s *Store) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fields)
}

// List returns a copy of the fields set, in the order first set; nil when
// none was.
func (s *Store) List() []Field {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.fields) == 0 {
		return nil
	}
	return append([]Field(nil), s.fields...)
}

// Reserved reports whether name is a field of status that the Framework
// writes itself.
func Reserved(name string) bool {
	return name == "conditions" || name == "observedGeneration"
}

// check validates name and returns value as decoded JSON.
func check(name string, value any) (decoded any, err error) {
	switch {
	case name == "":
		return nil, fmt.Errorf("%w: status field with an empty name", ErrInvalidField)
	case strings.Contains(name, "."):
		return nil, fmt.Errorf("%w: status.%s: a name, not a path: set the top-level field with the whole value", ErrInvalidField, name)
	case Reserved(name):
		return nil, fmt.Errorf("%w: status.%s is the Framework's own (use conditioncontext for conditions)", ErrInvalidField, name)
	}
	if value == nil {
		return nil, nil
	}
	defer func() {
		if r := recover(); r != nil {
			decoded, err = nil, fmt.Errorf("%w: status.%s: encode %T to JSON: panic: %v", ErrInvalidField, name, value, r)
		}
	}()
	data, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("%w: status.%s: encode %T to JSON: %w", ErrInvalidField, name, value, err)
	}
	if decoded, err = Decode(data); err != nil {
		return nil, fmt.Errorf("%w: status.%s: decode the JSON of %T: %w", ErrInvalidField, name, value, err)
	}
	return decoded, nil
}

// Decode returns data, JSON, as decoded JSON in the form Field.JSON has.
func Decode(data []byte) (any, error) {
	var v any
	err := utiljson.Unmarshal(data, &v)
	return v, err
}
