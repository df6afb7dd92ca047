package durable

import (
	"encoding/json"
	"sort"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Verdict says what resume will do with one node.
type Verdict struct {
	Node   string
	Action string // reuse | run
	Reason string
}

// PlanResume predicts, without running anything, what `skein resume` does:
// a node is reused when it succeeded before, its definition is unchanged
// (compared with old, the workflow the run used; nil when unknown) and
// every node before it is reused; otherwise it runs. The prediction is
// exact for parameters that depend only on upstream outputs, which resume
// compares by hash at run time.
func PlanResume(plan *engine.Plan, old *workflow.Workflow, steps []*store.Step) []Verdict {
	succeeded := map[string]bool{}
	masked := map[string]bool{}
	status := map[string]engine.Status{}
	for _, s := range steps {
		status[s.Node] = s.Status
		// A waiting step did its work: it goes on waiting (see ForResume).
		if s.Status == engine.StatusSuccess || s.Status == engine.StatusWaiting && s.ConfigHash != "" {
			succeeded[s.Node] = true
			masked[s.Node] = masked[s.Node] || s.Masked
		}
	}
	g := plan.G
	order := topoOrder(g)
	action := make([]string, len(g.Nodes))
	var out []Verdict
	for _, i := range order {
		n := g.Nodes[i]
		v := Verdict{Node: n.ID, Action: "run"}
		upstreamRuns := ""
		for _, ei := range g.In[i] {
			e := g.Edges[ei]
			if !e.Back && action[e.From] == "run" {
				upstreamRuns = g.Nodes[e.From].ID
				break
			}
		}
		switch {
		case plan.Nodes[i].Spec.Role == node.RoleTrigger:
			v.Action, v.Reason = "reuse", "trigger: the run's inputs"
		case !succeeded[n.ID] && status[n.ID] != "" && status[n.ID] != engine.StatusPending:
			v.Reason = "was " + string(status[n.ID])
		case !succeeded[n.ID]:
			v.Reason = "did not run"
		case old != nil && changed(old.Node(n.ID), n):
			v.Reason = "definition changed"
		case masked[n.ID]:
			v.Reason = "its output held a secret, stored masked: not reused"
		case upstreamRuns != "":
			v.Reason = "after " + upstreamRuns + ", which runs again"
		case status[n.ID] == engine.StatusWaiting:
			v.Action, v.Reason = "reuse", "waiting, unchanged: waits on until its signal or wake-up time"
		default:
			v.Action, v.Reason = "reuse", "succeeded, unchanged"
		}
		action[i] = v.Action
		out = append(out, v)
	}
	return out
}

func changed(old, cur *workflow.Node) bool {
	if old == nil {
		return true
	}
	a, _ := json.Marshal(old.Map())
	b, _ := json.Marshal(cur.Map())
	return string(a) != string(b)
}

// topoOrder orders nodes along forward edges, file order among equals.
func topoOrder(g *workflow.Graph) []int {
	indeg := make([]int, len(g.Nodes))
	for _, e := range g.Edges {
		if !e.Back {
			indeg[e.To]++
		}
	}
	var ready, out []int
	for i := range g.Nodes {
		if indeg[i] == 0 {
			ready = append(ready, i)
		}
	}
	for len(ready) > 0 {
		sort.Ints(ready)
		i := ready[0]
		ready = ready[1:]
		out = append(out, i)
		for _, ei := range g.Out[i] {
			e := g.Edges[ei]
			if e.Back {
				continue
			}
			if indeg[e.To]--; indeg[e.To] == 0 {
				ready = append(ready, e.To)
			}
		}
	}
	return out
}
