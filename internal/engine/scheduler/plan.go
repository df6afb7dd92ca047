package scheduler

import (
	"fmt"
	"sort"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// ctrl is how the scheduler treats a node kind.
type ctrl uint8

const (
	ctrlAction ctrl = iota
	ctrlTrigger
	ctrlLoop
	ctrlForEach
	ctrlEndLoop
	ctrlMerge
	ctrlFail
	ctrlWait
)

// PlanNode is a node with everything the scheduler needs precomputed.
type PlanNode struct {
	Index int
	ID    string
	Type  string
	Node  *workflow.Node
	Spec  *node.Spec
	// Def is the node's canonical definition, which its config hash
	// covers; the engine's NewPlan makes it.
	Def []byte

	ctrl          ctrl
	Disabled      bool
	FallThrough   string
	MaxVisits     int
	Retries       int
	Backoff       time.Duration
	Timeout       time.Duration
	OnError       string
	MergeAny      bool
	MaxIterations int
	Concurrency   int
	// SignalTimeout is how long a wait node waits for a signal before it
	// follows its timeout handle: the node's own timeout:, never the
	// workflow's default (0: no limit).
	SignalTimeout time.Duration
	// LoopOf is the loop an endloop closes (-1 otherwise).
	LoopOf int
	// Home is the innermost loop or foreach whose body holds the node, -1
	// for the run itself; Slot is its place in that body.
	Home int
	Slot int
	// Refs lists the nodes whose outputs the node's templates read.
	Refs []int

	in  []int // forward in-edges from nodes of the same home
	out []int // every out-edge
	// bodyIn counts in-edges that come from the loop that owns the node
	// (the body handle); they are fired when a frame starts.
	bodyIn int
	// region lists the nodes whose home is this loop (loop and foreach only).
	region []int
	// regionEdges lists forward edges between nodes of the region.
	regionEdges []int
	// rearm lists, for a node that is the target of a back-edge (not an
	// endloop one), the nodes of its cycle that may be re-armed when that
	// edge fires, in topological order.
	rearm []int
	// cycle is the cycle (strongly connected component, endloop back-edges
	// aside) the node is on, nil when it is on none.
	cycle *cycle
	// cycles lists the cycles among the nodes of the region (loop and
	// foreach only).
	cycles []*cycle
	// topo is the node's place in a topological order of the forward edges,
	// file order breaking ties.
	topo int
}

// cycle is a set of nodes that reach each other through edges other than
// endloop back-edges. Its members share a home. While a cycle may still come
// round again, the edges that leave it are held open instead of dying: a
// node that did not take its exit on this visit may take it on the next.
type cycle struct {
	members []int
	// entries are the forward edges into the cycle from outside it; exits
	// the forward edges out of it.
	entries []int
	exits   []int
}

// Plan is a workflow prepared for running.
type Plan struct {
	W     *workflow.Workflow
	G     *workflow.Graph
	Nodes []*PlanNode
	// root region: nodes whose home is the run.
	rootRegion []int
	rootEdges  []int
	rootCycles []*cycle
	// EdgeSlot is each edge's place among its home's edges (-1 for edges that
	// cross homes: body edges and endloop back-edges).
	EdgeSlot []int
}

// NewPlan prepares a valid workflow. It reports graph shapes the scheduler
// cannot run, such as an edge that jumps into a loop body from outside.
func NewPlan(w *workflow.Workflow, reg *node.Registry) (*Plan, error) {
	g := w.Graph()
	p := &Plan{W: w, G: g, Nodes: make([]*PlanNode, len(g.Nodes))}
	for i, n := range g.Nodes {
		spec, ok := reg.Lookup(n.Type)
		if !ok {
			return nil, fmt.Errorf("node %q: unknown node type %q", n.ID, n.Type)
		}
		pn := &PlanNode{Index: i, ID: n.ID, Type: n.Type, Node: n, Spec: spec, LoopOf: -1, Home: -1}
		pn.Disabled = n.Disabled
		pn.FallThrough = spec.FallThrough
		pn.MaxVisits = w.MaxVisitsOf(n)
		pn.Retries = w.Defaults.Retries
		if n.Retries != nil {
			pn.Retries = *n.Retries
		}
		pn.Backoff = w.Defaults.RetryBackoff
		if n.RetryBackoff != nil {
			pn.Backoff = *n.RetryBackoff
		}
		pn.Timeout = w.Defaults.Timeout
		if n.Timeout != nil {
			pn.Timeout = *n.Timeout
		}
		pn.OnError = w.Defaults.OnError
		if n.OnError != "" {
			pn.OnError = n.OnError
		}
		switch {
		case spec.Role == node.RoleTrigger:
			pn.ctrl = ctrlTrigger
		case spec.Role == node.RoleLoop:
			pn.ctrl = ctrlLoop
			pn.MaxIterations = intParam(spec, n.Params, "max_iterations", 10)
		case spec.Role == node.RoleForEach:
			pn.ctrl = ctrlForEach
			pn.Concurrency = max(1, intParam(spec, n.Params, "concurrency", 1))
		case spec.Role == node.RoleLoopEnd:
			pn.ctrl = ctrlEndLoop
			if l, ok := n.Params["loop"].(string); ok {
				if li, ok := g.Index[l]; ok {
					pn.LoopOf = li
				}
			}
		case spec.Role == node.RoleJoin:
			pn.ctrl = ctrlMerge
			pn.MergeAny = n.Params["wait"] == "any"
		case spec.Role == node.RoleFail:
			pn.ctrl = ctrlFail
		case spec.Role == node.RoleWait:
			pn.ctrl = ctrlWait
			if n.Timeout != nil {
				pn.SignalTimeout = *n.Timeout
			}
		}
		p.Nodes[i] = pn
	}
	for ei, e := range g.Edges {
		p.Nodes[e.From].out = append(p.Nodes[e.From].out, ei)
	}
	if err := p.regions(); err != nil {
		return nil, err
	}
	if err := p.references(); err != nil {
		return nil, err
	}
	p.cycles()
	p.topoOrder()
	p.rearmSets()
	return p, nil
}

// isExit reports whether edge ei leaves a cycle.
func (p *Plan) isExit(ei int) bool {
	e := p.G.Edges[ei]
	c := p.Nodes[e.From].cycle
	return c != nil && !e.Back && p.EdgeSlot[ei] >= 0 && p.Nodes[e.To].cycle != c
}

// cycles finds the cycles that are not loops, with the edges into and out of
// each.
func (p *Plan) cycles() {
	g := p.G
	comp, count := g.SCC(func(e workflow.GraphEdge) bool {
		from := p.Nodes[e.From]
		return from.ctrl == ctrlEndLoop && from.LoopOf == e.To
	})
	size := make([]int, count)
	for _, c := range comp {
		size[c]++
	}
	selfLoop := make([]bool, len(p.Nodes))
	for _, e := range g.Edges {
		if e.From == e.To {
			selfLoop[e.From] = true
		}
	}
	byComp := make([]*cycle, count)
	for i, pn := range p.Nodes {
		c := comp[i]
		if size[c] < 2 && !selfLoop[i] {
			continue
		}
		if byComp[c] == nil {
			byComp[c] = &cycle{}
			if pn.Home < 0 {
				p.rootCycles = append(p.rootCycles, byComp[c])
			} else {
				h := p.Nodes[pn.Home]
				h.cycles = append(h.cycles, byComp[c])
			}
		}
		byComp[c].members = append(byComp[c].members, i)
		pn.cycle = byComp[c]
	}
	for ei, e := range g.Edges {
		if e.Back || p.EdgeSlot[ei] < 0 {
			continue
		}
		from, to := p.Nodes[e.From].cycle, p.Nodes[e.To].cycle
		if from == to {
			continue
		}
		if from != nil {
			from.exits = append(from.exits, ei)
		}
		if to != nil {
			to.entries = append(to.entries, ei)
		}
	}
}

// rearmSets finds what a back-edge into t re-arms: t and the nodes of its
// cycle that t reaches by forward edges, in topological order so that
// re-arming sees each node's inputs first. Nodes outside the cycle are never
// re-armed: they run at most once per frame, when the cycle first reaches
// them (or, through a held exit, when it ends).
func (p *Plan) rearmSets() {
	g := p.G
	for _, e := range g.Edges {
		if !e.Back {
			continue
		}
		from, t := p.Nodes[e.From], p.Nodes[e.To]
		if from.ctrl == ctrlEndLoop && from.LoopOf == e.To || t.rearm != nil || t.cycle == nil {
			continue
		}
		seen := map[int]bool{e.To: true}
		queue := []int{e.To}
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			for _, ei := range p.Nodes[c].out {
				ge := g.Edges[ei]
				if ge.Back || seen[ge.To] || p.Nodes[ge.To].cycle != t.cycle {
					continue
				}
				seen[ge.To] = true
				queue = append(queue, ge.To)
			}
		}
		for k := range seen {
			t.rearm = append(t.rearm, k)
		}
		sort.Slice(t.rearm, func(i, j int) bool { return p.Nodes[t.rearm[i]].topo < p.Nodes[t.rearm[j]].topo })
	}
}

// topoOrder ranks the nodes in a topological order of the forward edges
// (Kahn's, starting from the entries in file order), so that "the last node
// of a body" means the same whatever order the nodes finished in.
func (p *Plan) topoOrder() {
	g := p.G
	indeg := make([]int, len(p.Nodes))
	for _, e := range g.Edges {
		if !e.Back {
			indeg[e.To]++
		}
	}
	queue := make([]int, 0, len(p.Nodes))
	for i := range p.Nodes {
		if indeg[i] == 0 {
			queue = append(queue, i)
		}
	}
	for k := 0; k < len(queue); k++ {
		c := queue[k]
		p.Nodes[c].topo = k
		for _, ei := range g.Out[c] {
			if e := g.Edges[ei]; !e.Back {
				indeg[e.To]--
				if indeg[e.To] == 0 {
					queue = append(queue, e.To)
				}
			}
		}
	}
}

func intParam(spec *node.Spec, m map[string]any, k string, def int) int {
	p, _ := spec.Param(k)
	if n, err := p.Coerce(m[k]); err == nil {
		if n, ok := n.(int); ok {
			return n
		}
	}
	return def
}

// regions finds each loop's body, the home of every node, and the edges of
// each home.
func (p *Plan) regions() error {
	g := p.G
	n := len(p.Nodes)
	var loops []int
	body := map[int][]bool{}
	for i, pn := range p.Nodes {
		if pn.ctrl != ctrlLoop && pn.ctrl != ctrlForEach {
			continue
		}
		loops = append(loops, i)
		in := make([]bool, n)
		var queue []int
		for _, ei := range g.Out[i] {
			if e := g.Edges[ei]; e.On == "body" && !e.Back && !in[e.To] && e.To != i {
				in[e.To] = true
				queue = append(queue, e.To)
			}
		}
		for len(queue) > 0 {
			c := queue[0]
			queue = queue[1:]
			for _, ei := range g.Out[c] {
				e := g.Edges[ei]
				if e.To == i || in[e.To] {
					continue
				}
				if e.Back && p.Nodes[c].ctrl == ctrlEndLoop {
					continue
				}
				in[e.To] = true
				queue = append(queue, e.To)
			}
		}
		body[i] = in
	}
	size := func(l int) int {
		c := 0
		for _, b := range body[l] {
			if b {
				c++
			}
		}
		return c
	}
	sizes := map[int]int{}
	for _, l := range loops {
		sizes[l] = size(l)
	}
	for i, pn := range p.Nodes {
		best := -1
		for _, l := range loops {
			if body[l][i] && (best < 0 || sizes[l] < sizes[best]) {
				best = l
			}
		}
		pn.Home = best
	}
	for i, pn := range p.Nodes {
		if pn.Home < 0 {
			pn.Slot = len(p.rootRegion)
			p.rootRegion = append(p.rootRegion, i)
		} else {
			h := p.Nodes[pn.Home]
			pn.Slot = len(h.region)
			h.region = append(h.region, i)
		}
	}
	p.EdgeSlot = make([]int, len(g.Edges))
	for ei, e := range g.Edges {
		p.EdgeSlot[ei] = -1
		from, to := p.Nodes[e.From], p.Nodes[e.To]
		if e.Back {
			if from.ctrl == ctrlEndLoop && from.LoopOf == e.To {
				continue
			}
			if from.Home != to.Home {
				return fmt.Errorf("edge %s → %s jumps out of a loop body; leave a loop through its done handle", from.ID, to.ID)
			}
		}
		if from.Home == to.Home {
			if e.Back {
				continue
			}
			if from.Home < 0 {
				p.EdgeSlot[ei] = len(p.rootEdges)
				p.rootEdges = append(p.rootEdges, ei)
			} else {
				h := p.Nodes[from.Home]
				p.EdgeSlot[ei] = len(h.regionEdges)
				h.regionEdges = append(h.regionEdges, ei)
			}
			to.in = append(to.in, ei)
			continue
		}
		if to.Home == e.From && e.On == "body" {
			to.bodyIn++
			continue
		}
		return fmt.Errorf("edge %s → %s crosses into or out of a loop body; enter a body only by the loop's body handle and leave it by its done handle", from.ID, to.ID)
	}
	return nil
}

// references records which nodes each node's templates read, so a task's
// scope holds just those outputs.
func (p *Plan) references() error {
	for _, pn := range p.Nodes {
		seen := map[int]bool{}
		add := func(code string) {
			refs, err := expr.References(code)
			if err != nil {
				return // Validate reported it.
			}
			for _, r := range refs {
				if i, ok := p.G.Index[r.Root]; ok && !seen[i] {
					seen[i] = true
					pn.Refs = append(pn.Refs, i)
				}
			}
		}
		var walk func(v any, isExpr bool)
		walk = func(v any, isExpr bool) {
			switch x := v.(type) {
			case string:
				if isExpr {
					add(x)
					return
				}
				if !expr.HasTemplate(x) {
					return
				}
				t, err := expr.ParseTemplate(x)
				if err != nil {
					return
				}
				for _, s := range t.Segments() {
					add(s.Code)
				}
			case []any:
				for _, e := range x {
					walk(e, isExpr)
				}
			case map[string]any:
				for k, e := range x {
					walk(e, isExpr || k == "condition")
				}
			}
		}
		for k, v := range pn.Node.Params {
			prm, _ := pn.Spec.Param(k)
			walk(v, prm.Expr)
		}
		for _, c := range pn.Node.Checks {
			if c.Expr != "" {
				walk(c.Expr, true)
			}
		}
		sort.Ints(pn.Refs)
	}
	return nil
}

// Triggers returns the trigger nodes.
func (p *Plan) Triggers() []*PlanNode {
	var out []*PlanNode
	for _, pn := range p.Nodes {
		if pn.ctrl == ctrlTrigger {
			out = append(out, pn)
		}
	}
	return out
}

// IsForEach reports whether the node is a foreach: its items are handed
// to its body one by one, and not read whole.
func (pn *PlanNode) IsForEach() bool { return pn.ctrl == ctrlForEach }

// Iterates reports whether the node is a loop or a foreach: a step of it
// stands for its passes, and is never reused.
func (pn *PlanNode) Iterates() bool { return pn.ctrl == ctrlLoop || pn.ctrl == ctrlForEach }

// EndsAPath reports whether the node's output is one of the run's outputs
// when the workflow declares none: it has no out-edges, and is neither a
// trigger nor an endloop.
func (pn *PlanNode) EndsAPath() bool {
	return len(pn.out) == 0 && pn.ctrl != ctrlTrigger && pn.ctrl != ctrlEndLoop
}
