package durable

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
)

// Reuser answers the engine's reuse questions from an earlier run's steps.
type Reuser struct {
	mu      sync.Mutex
	byHash  map[string][]*store.Step // successful steps by config hash, in step order
	pinned  map[string][]*store.Step // pinned node → its successful steps by visit
	used    map[*store.Step]bool     // pinned steps taken
	masked  map[string]bool          // node + "\x00" + hash of steps stored masked
	Reused  int                      // how many tasks were answered
	problem error
	// Continue marks the reuse of a waiting run going on after a signal
	// or a timer: its steps are its own, kept as they were (Reused.Kept),
	// not cached.
	Continue bool
}

// ForResume reuses every successful step whose config hash matches: same
// node definition, same resolved parameters, same upstream. Failed steps
// never count as done. A waiting step with a config hash did its work and
// only held its successors (a wait, a _delay_seconds, a wait for a
// signal): it is reused too, and holds them again until its wake-up time
// (Wakes) or its signal.
//
// steps may hold several generations of a run (store.StepHistory): what
// any execution completed counts. A later generation repeats, as cached
// steps, what an earlier one completed, so for each node and hash the
// steps of the generation that completed it most often are taken: the
// same result is never offered twice, and a visit completed only by an
// execution that was killed is still found.
func ForResume(steps []*store.Step) *Reuser {
	r := &Reuser{byHash: map[string][]*store.Step{}, used: map[*store.Step]bool{}, masked: map[string]bool{}}
	type key struct{ node, hash string }
	byGen := map[key]map[int][]*store.Step{}
	var keys []key
	for _, s := range steps {
		if s.Status != engine.StatusSuccess && s.Status != engine.StatusWaiting || s.ConfigHash == "" {
			continue
		}
		if s.Masked {
			// Its output held a secret and is stored masked: never data.
			r.masked[s.Node+"\x00"+s.ConfigHash] = true
			continue
		}
		k := key{s.Node, s.ConfigHash}
		if byGen[k] == nil {
			byGen[k] = map[int][]*store.Step{}
			keys = append(keys, k)
		}
		byGen[k][s.Generation] = append(byGen[k][s.Generation], s)
	}
	for _, k := range keys {
		var best []*store.Step
		bestGen := 0
		for g, ss := range byGen[k] {
			if len(ss) > len(best) || (len(ss) == len(best) && g > bestGen) {
				best, bestGen = ss, g
			}
		}
		r.byHash[k.hash] = append(r.byHash[k.hash], best...)
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
	// Of several generations (store.StepHistory), the latest record of
	// each visit counts.
	type key struct {
		node  string
		visit int
	}
	latest := map[key]int{}
	for _, s := range steps {
		if !want[s.Node] || s.Status != engine.StatusSuccess {
			continue
		}
		k := key{s.Node, s.Visit}
		if i, ok := latest[k]; ok {
			r.pinned[s.Node][i] = s
			continue
		}
		latest[k] = len(r.pinned[s.Node])
		r.pinned[s.Node] = append(r.pinned[s.Node], s)
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
		if s != nil && s.Masked {
			// *** is not the value the step produced: pinning it would
			// feed the mask downstream as data.
			return engine.Reused{Miss: "it is pinned, but its earlier output held a secret value, stored masked, so it runs again"}, false
		}
		pinned = s != nil
	}
	if s == nil {
		s = r.takeByHash(q.Node, q.Hash)
	}
	if s == nil {
		if r.masked[q.Node+"\x00"+q.Hash] {
			return engine.Reused{Miss: "its earlier output held a secret value, stored masked, so it is not reused"}, false
		}
		return engine.Reused{}, false
	}
	if pinned {
		r.used[s] = true // a pinned step taken is not offered again
	}
	// A step that was pinned stays pinned when a resume reuses it: its
	// output is still the one the user chose, not one this run computed.
	pinned = pinned || s.Pinned
	out, directives, err := Output(s)
	if err != nil {
		r.problem = err
		return engine.Reused{}, false
	}
	r.Reused++
	clean := make(map[string]any, len(out))
	for k, v := range out {
		if k != "success" && k != "error" {
			clean[k] = v
		}
	}
	re := engine.Reused{Output: clean, Directives: directives, Pinned: pinned, Kept: r.Continue && !pinned}
	if re.Kept && s.StartedAt != nil && s.FinishedAt != nil {
		re.StartedAt, re.FinishedAt = *s.StartedAt, *s.FinishedAt
	}
	return re, true
}

// takeByHash takes the first step of node with the config hash that
// was not reused yet, if any: a step reused is no longer offered, and
// its record is let go of, so a resume that goes over a long run's
// completed steps holds fewer of them as it goes.
func (r *Reuser) takeByHash(node, hash string) *store.Step {
	list := r.byHash[hash]
	for i, c := range list {
		if c.Node != node {
			continue
		}
		if i == 0 {
			list[0] = nil // what the backing array holds stays reachable
			list = list[1:]
		} else {
			list = slices.Delete(list, i, i+1)
		}
		if len(list) == 0 {
			delete(r.byHash, hash)
		} else {
			r.byHash[hash] = list
		}
		return c
	}
	return nil
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

// Wakes answers the engine's Options.Wakes from a run's steps of every
// generation: the wake-up time recorded last for a step of the node, visit
// and config hash, so a resumed wait ends when it was due.
func Wakes(steps []*store.Step) func(node string, visit int, hash string) (time.Time, bool) {
	type key struct {
		node, hash string
		visit      int
	}
	wakes := map[key]time.Time{}
	for _, s := range steps { // oldest generation first: later ones win
		if s.WakeAt != nil && s.ConfigHash != "" {
			wakes[key{s.Node, s.ConfigHash, s.Visit}] = *s.WakeAt
		}
	}
	return func(node string, visit int, hash string) (time.Time, bool) {
		w, ok := wakes[key{node, hash, visit}]
		return w, ok
	}
}

// RerunSteps reads the steps a rerun of run runID takes from it: those of
// the pinned nodes (ForPins) and of the trigger (TriggerPayload), not
// every step of a big run.
func RerunSteps(ctx context.Context, st store.Store, runID string, pins []string, trigger string) ([]*store.Step, error) {
	nodes := slices.Clone(pins)
	if trigger != "" && !slices.Contains(nodes, trigger) {
		nodes = append(nodes, trigger)
	}
	if len(nodes) == 0 {
		return nil, nil
	}
	return st.StepHistory(ctx, runID, nodes...)
}
