package node

import (
	"errors"
	"fmt"
	"sync"
)

// Constructor makes a fresh Kind value for one node of a workflow. It is nil
// for kinds whose behaviour lives in the engine (control flow) or that cannot
// run in this build.
type Constructor func() Kind

// ErrDuplicate is returned when a kind is registered twice.
var ErrDuplicate = errors.New("node kind already registered")

// Registry holds kinds by name. The zero value is not usable; use
// NewRegistry. It is safe for concurrent use.
type Registry struct {
	mu    sync.RWMutex
	kinds map[string]*entry
}

type entry struct {
	spec Spec
	ctor Constructor
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{kinds: map[string]*entry{}} }

// Register adds a kind. It fails on an empty or malformed spec and on a
// duplicate kind; nothing is ever silently overwritten.
func (r *Registry) Register(spec Spec, ctor Constructor) error {
	if err := spec.check(); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.kinds[spec.Kind]; ok {
		return fmt.Errorf("%w: %q", ErrDuplicate, spec.Kind)
	}
	r.kinds[spec.Kind] = &entry{spec: spec, ctor: ctor}
	return nil
}

// MustRegister is Register that panics on error, for use from init.
func (r *Registry) MustRegister(spec Spec, ctor Constructor) {
	if err := r.Register(spec, ctor); err != nil {
		panic(err)
	}
}

// Lookup returns the spec of a kind. The spec is the registry's own, shared
// by every caller (validation looks kinds up several times a node, and a
// copy each time cost more than the rest of validating): read it, never
// change it.
func (r *Registry) Lookup(kind string) (*Spec, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	e, ok := r.kinds[kind]
	if !ok {
		return nil, false
	}
	return &e.spec, true
}

// New returns a fresh instance of kind, or false when the kind is unknown
// or has no constructor.
func (r *Registry) New(kind string) (Kind, bool) {
	r.mu.RLock()
	e, ok := r.kinds[kind]
	r.mu.RUnlock()
	if !ok || e.ctor == nil {
		return nil, false
	}
	return e.ctor(), true
}

// Clone returns a new registry that holds every kind r holds now. Kinds
// registered in either afterwards are not seen by the other: a program
// adds its own kinds to a clone of Default without changing Default.
func (r *Registry) Clone() *Registry {
	r.mu.RLock()
	defer r.mu.RUnlock()
	c := NewRegistry()
	for k, e := range r.kinds {
		c.kinds[k] = e
	}
	return c
}

// Kinds returns every registered kind name, sorted.
func (r *Registry) Kinds() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return sortedKinds(r.kinds)
}

// Specs returns every registered spec, sorted by kind.
func (r *Registry) Specs() []*Spec {
	var out []*Spec
	for _, k := range r.Kinds() {
		s, _ := r.Lookup(k)
		out = append(out, s)
	}
	return out
}

// Default is the process-wide registry the built-in kinds register into.
var Default = NewRegistry()

// Register adds a kind to Default.
func Register(spec Spec, ctor Constructor) error { return Default.Register(spec, ctor) }

// MustRegister adds a kind to Default and panics on error.
func MustRegister(spec Spec, ctor Constructor) { Default.MustRegister(spec, ctor) }
