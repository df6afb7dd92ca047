package durable

import (
	"sync"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// Reuser answers the engine's reuse questions from an earlier run's steps.
type Reuser struct {
	mu      sync.Mutex
	byHash  map[string][]*store.Step // successful steps by config hash, in step order
	pinned  map[string][]*store.Step // pinned node → its successful steps by visit
	used    map[*store.Step]bool
	Reused  int // how many tasks were answered
	problem error
}

// ForResume reuses every successful step whose config hash matches: same
// node definition, same resolved parameters, same upstream. Failed steps
// never count as done.
func ForResume(steps []*store.Step) *Reuser {
	r := &Reuser{byHash: map[string][]*store.Step{}, used: map[*store.Step]bool{}}
	for _, s := range steps {
		if s.Status == string(engine.StatusSuccess) && s.ConfigHash != "" {
			r.byHash[s.ConfigHash] = append(r.byHash[s.ConfigHash], s)
		}
	}
	return r
}

// ForPins reuses the outputs of the pinned nodes' successful steps,
// whatever their hash, visit by visit.
func ForPins(steps []*store.Step, pins []string) *Reuser {
	r := &Reuser{pinned: map[string][]*store.Step{}, used: map[*store.Step]bool{}}
	want := map[string]bool{}
	for _, p := range pins {
		want[p] = true
	}
	for _, s := range steps {
		if want[s.Node] && s.Status == string(engine.StatusSuccess) {
			r.pinned[s.Node] = append(r.pinned[s.Node], s)
		}
	}
	return r
}

// Reuse is the engine's Options.Reuse.
func (r *Reuser) Reuse(q engine.ReuseQuery) (engine.Reused, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var s *store.Step
	pinned := false
	if steps, ok := r.pinned[q.Node]; ok {
		for _, c := range steps {
			if !r.used[c] && (c.Visit == q.Visit || s == nil) {
				s = c
				if c.Visit == q.Visit {
					break
				}
			}
		}
		pinned = s != nil
	}
	if s == nil {
		for _, c := range r.byHash[q.Hash] {
			if !r.used[c] && c.Node == q.Node {
				s = c
				break
			}
		}
	}
	if s == nil {
		return engine.Reused{}, false
	}
	out, directives, err := Output(s)
	if err != nil {
		r.problem = err
		return engine.Reused{}, false
	}
	r.used[s] = true
	r.Reused++
	clean := make(map[string]any, len(out))
	for k, v := range out {
		if k != "success" && k != "error" {
			clean[k] = v
		}
	}
	return engine.Reused{Output: clean, Directives: directives, Pinned: pinned}, true
}

// Pinned reports which pins have no successful step to reuse.
func (r *Reuser) Missing(pins []string) []string {
	var out []string
	for _, p := range pins {
		if len(r.pinned[p]) == 0 {
			out = append(out, p)
		}
	}
	return out
}
