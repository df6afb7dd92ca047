// Package nodetest is the conformance suite every node kind passes: its
// spec documents every parameter, its handles and fall-through are
// consistent, and its runner never panics on a cancelled context or on
// empty parameters.
package nodetest

import (
	"context"
	"testing"
	"time"

	"github.com/skeinhq/skein/node"
)

// Run checks every kind registered in reg.
func Run(t *testing.T, reg *node.Registry) {
	t.Helper()
	for _, spec := range reg.Specs() {
		spec := spec
		t.Run(spec.Kind, func(t *testing.T) {
			t.Parallel()
			if spec.Description == "" {
				t.Errorf("kind %s has no description", spec.Kind)
			}
			if spec.Category == "" {
				t.Errorf("kind %s has no category", spec.Kind)
			}
			for _, p := range spec.Params {
				if p.Description == "" {
					t.Errorf("parameter %s of %s has no description", p.Name, spec.Kind)
				}
				if p.Required && p.Default != nil {
					t.Errorf("parameter %s of %s is required and has a default", p.Name, spec.Kind)
				}
			}
			if spec.FallThrough != "" && !contains(spec.AllHandles(nil), spec.FallThrough) {
				t.Errorf("kind %s falls through by %q, which is not one of its handles", spec.Kind, spec.FallThrough)
			}
			k, ok := reg.New(spec.Kind)
			if !ok {
				return // behaviour lives in the engine
			}
			for name, ctx := range map[string]context.Context{"cancelled": cancelled(), "live": context.Background()} {
				func() {
					defer func() {
						if p := recover(); p != nil {
							t.Errorf("kind %s panicked with %s context and empty parameters: %v", spec.Kind, name, p)
						}
					}()
					ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
					defer cancel()
					_, _ = k.Run(ctx, emptyCall(t))
				}()
			}
		})
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}

func emptyCall(t *testing.T) *node.Call {
	dir := t.TempDir()
	return &node.Call{
		RunID: "conformance", NodeID: "n", Visit: 1, Attempt: 1, Params: map[string]any{},
		IdempotencyKey: "conformance/n/1",
		Emit:           func(string, map[string]any) {},
		Redact:         func(s string) string { return s },
		Eval:           func(string) (any, error) { return nil, nil },
		Now:            time.Now,
		ArtifactDir:    dir,
		Files:          node.NewFiles(dir, dir),
		Services:       &node.Services{},
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
