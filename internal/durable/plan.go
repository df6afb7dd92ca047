package durable

import (
	"encoding/json"
	"sort"
	"strings"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// What a resume does with a step (Verdict.Action).
const (
	// ActReuse: the step's recorded output is used again (↻ cached), or,
	// for a trigger, the run's inputs are.
	ActReuse = "reuse"
	// ActRun: the node runs again.
	ActRun = "run"
	// ActSkip: the step is skipped, as the run's recorded data decide.
	ActSkip = "skip"
	// ActDepends: what the node does depends on a node that runs again,
	// or on a wait's signal; it comes after it (or a later visit of it
	// does, on a cycle).
	ActDepends = "depends"
)

// Verdict says what a resume does with one step of the run (or of one of
// its child runs), or, with ActDepends, with the steps of a node that come
// after a node that runs again.
type Verdict struct {
	// Run is the child run the step belongs to ("" for the run itself).
	Run       string
	Node      string
	Visit     int // 0 with ActDepends
	Iteration int
	// Loop is the step's loop context ({index, item, total} in a foreach
	// body, {iteration} in a loop's).
	Loop   map[string]any
	Action string
	Reason string
}

// DryRun is a dry run of a resume (engine.Options.DryRun) of one run: the
// run's plan, the workflow it ran with before (nil when unknown), its
// recorded steps of every generation and the steps the dry run recorded.
type DryRun struct {
	RunID string
	// Child is set for a child run's dry run.
	Child   bool
	Plan    *engine.Plan
	Old     *workflow.Workflow
	History []*store.Step
	Steps   []*store.Step
	// Open are the steps the dry run did not call (engine.Result.Open).
	Open []*store.Step
}

// Verdicts turns dry runs of a resume — the run's and its child runs' —
// into what the resume does: the steps the dry run recorded, in step
// order, each with its action (Action), and then, for every node that a
// step that runs again, or a wait that goes on waiting, leads to, a
// verdict ActDepends. A child run's verdicts follow its parent's.
func Verdicts(runs []DryRun) []Verdict {
	var out []Verdict
	for _, dr := range runs {
		out = append(out, dr.verdicts()...)
	}
	return out
}

func (dr DryRun) verdicts() []Verdict {
	steps := append([]*store.Step(nil), dr.Steps...)
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].StepOrder < steps[j].StepOrder })
	var out []Verdict
	var open []int
	// open are the nodes whose steps run again or go on waiting; why
	// says, by node, what comes after it waits for.
	why := map[string]string{}
	seen := map[int]bool{}
	byID := make(map[string]*engine.PlanNode, len(dr.Plan.Nodes))
	for _, pn := range dr.Plan.Nodes {
		byID[pn.ID] = pn
	}
	for _, s := range steps {
		pn := byID[s.Node]
		// A step still pending was planned but not reached: the dry run
		// stopped before it, at a step that runs again, whose depends
		// verdicts cover it.
		if pn == nil || s.Status == engine.StatusPending {
			continue
		}
		seen[pn.Index] = true
		act, reason := Action(pn, s)
		isOpen := dr.isOpen(s)
		switch {
		case isOpen:
			act, reason = ActRun, ""
			open = append(open, pn.Index)
			why[s.Node] = "which runs again; reused only if its inputs come out unchanged"
		case s.Status == engine.StatusWaiting && s.Cached && why[s.Node] == "":
			// A wait the resume goes on with: what follows comes when
			// its signal does.
			open = append(open, pn.Index)
			why[s.Node] = "which waits for its signal"
		}
		if act == ActRun {
			reason = dr.why(pn, s, reason, isOpen)
		}
		out = append(out, Verdict{Run: dr.child(), Node: s.Node, Visit: s.Visit, Iteration: s.Iteration, Loop: s.Loop, Action: act, Reason: reason})
	}
	// What follows them: every node they lead to, on any edge (a cycle's
	// back edge leads to later visits).
	g := dr.Plan.G
	queue := append([]int(nil), open...)
	from := map[int]string{}
	for _, i := range open {
		from[i] = g.Nodes[i].ID
	}
	reached := map[int]bool{}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, ei := range g.Out[i] {
			to := g.Edges[ei].To
			if reached[to] {
				continue
			}
			reached[to] = true
			if _, ok := from[to]; !ok {
				from[to] = from[i]
			}
			queue = append(queue, to)
		}
	}
	for _, i := range topoOrder(g) {
		if !reached[i] {
			continue
		}
		n := g.Nodes[i]
		reason := "after " + from[i] + ", " + why[from[i]]
		if seen[i] {
			reason = "any later visit comes after " + from[i] + ", " + why[from[i]]
		}
		out = append(out, Verdict{Run: dr.child(), Node: n.ID, Action: ActDepends, Reason: reason})
	}
	return out
}

// child is the id of the child run the dry run is of, or "".
func (dr DryRun) child() string {
	if dr.Child {
		return dr.RunID
	}
	return ""
}

// isOpen reports whether a dry run's step is one it did not call.
func (dr DryRun) isOpen(s *store.Step) bool {
	for _, o := range dr.Open {
		if o != nil && o.Node == s.Node && o.Visit == s.Visit {
			return true
		}
	}
	return false
}

// Action says what a step recorded by a resume, or by its dry run, is to
// the resume: a reused step, a trigger (the run's inputs), a skipped step,
// or one that ran (or, in a dry run, runs) again; reason is a first word
// on why.
func Action(pn *engine.PlanNode, s *store.Step) (action, reason string) {
	switch {
	case s.Cached || s.Pinned:
		if s.Status == engine.StatusWaiting {
			return ActReuse, "waiting, unchanged: waits on until its signal or wake-up time"
		}
		return ActReuse, "succeeded, unchanged"
	case pn.Spec.Role == node.RoleTrigger:
		return ActReuse, "trigger: the run's inputs"
	case s.Status == engine.StatusSkipped:
		if s.SkipReason != "" {
			return ActSkip, strings.ReplaceAll(s.SkipReason, "_", " ")
		}
		return ActSkip, "not reached"
	case pn.Iterates():
		return ActRun, "evaluated again on each pass; its body's steps are reused where they can be"
	case s.ConfigHash == "" && s.Status == engine.StatusSuccess:
		return ActRun, "no work of its own: settled again from its inputs"
	}
	return ActRun, ""
}

// why says why a step that runs again is not reused.
func (dr DryRun) why(pn *engine.PlanNode, s *store.Step, said string, open bool) string {
	if said != "" {
		return said
	}
	n := pn.Node
	if dr.Old != nil && changed(dr.Old.Node(n.ID), n) {
		return "definition changed"
	}
	var prior *store.Step
	for _, h := range dr.History {
		if h.Node != n.ID {
			continue
		}
		if h.Masked && h.ConfigHash == s.ConfigHash && s.ConfigHash != "" {
			return "its earlier output held a secret value, stored masked, so it is not reused"
		}
		if h.Visit == s.Visit && h.Iteration == s.Iteration && (prior == nil || h.Generation >= prior.Generation) {
			prior = h
		}
	}
	reason := "did not run"
	switch {
	case prior == nil:
	case prior.Status == engine.StatusSuccess || prior.Status == engine.StatusWaiting && prior.ConfigHash != "":
		reason = "its inputs changed (a node before it runs again, or its parameters render differently)"
	default:
		reason = "was " + string(prior.Status)
	}
	if !open && pn.Spec.Pure {
		reason += "; it has no side effects and is evaluated now"
		if s.Status == engine.StatusFailed && s.Error != nil {
			reason += ": it fails again (" + s.Error.Message + ")"
		}
	}
	return reason
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
