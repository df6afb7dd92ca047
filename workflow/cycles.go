package workflow

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/node"
)

// endlessCycles reports the cycles a run can never leave. The scheduler
// runs a cycle round again whenever one of its nodes takes an edge back
// into it, and fails a node that would go past its max_visits (on_error
// applies to that failure). A cycle therefore ends well only when some
// node on it can take a handle none of whose edges goes back into it: a
// branch (if, switch, guardrail) or a loop choosing a handle that leaves
// the cycle or ends the branch, an action whose edges all leave it, a
// failure whose on_error edges leave it.
//
// When no node on a cycle a run reaches can do that, and each of them
// sends the run round it by one edge at a time, every run that gets to it
// fails: an error. Otherwise it may still end, in ways no edge was written
// for, and it is a warning: a node returning a _route no edge takes, a
// failure that on_error sends nowhere, a wait for a signal that never
// comes, or branches the cycle runs side by side cutting one another
// short (the scheduler ignores a jump back to a node that is still
// running).
//
// The cycles are the strongly connected components of the graph without
// the loops' own edges (a loop's body handle and its endloop's jump back):
// a loop goes on by done after at most max_iterations passes, and the
// cycles inside a body are checked on their own, its endloop being a way
// out of them.
func (v *validator) endlessCycles() {
	if v.brokenEdges {
		return // the edges that leave a cycle are not known
	}
	g := v.g
	// Every cycle holds an edge the graph marks as a jump back (the one
	// into the node of it a depth-first walk meets first), so a graph
	// without such an edge besides the endloops' has none to check.
	if !slices.ContainsFunc(g.Edges, func(e GraphEdge) bool { return e.Back && !v.loopEdge(e) }) {
		return
	}
	comp, count := g.SCC(v.loopEdge)
	size := make([]int, count)
	for _, c := range comp {
		size[c]++
	}
	var order []int // the components that may be cycles, by first node
	members := map[int][]int{}
	for i, c := range comp {
		if size[c] == 1 && !v.selfLoop(i) {
			continue
		}
		if members[c] == nil {
			order = append(order, c)
		}
		members[c] = append(members[c], i)
	}
	var live []bool
	var waits []bool // by node: a loop whose body may wait for a signal
	for _, c := range order {
		ms := members[c]
		if !v.knownNodes(ms) {
			continue
		}
		if live == nil {
			starts, _ := v.starts()
			live = v.live(starts)
		}
		if !slices.ContainsFunc(ms, func(i int) bool { return live[i] }) {
			continue // reachability warns about its nodes
		}
		if waits == nil {
			waits = v.bodiesThatWait()
		}
		inCycle := func(i int) bool { return comp[i] == c }
		var st cycleStops
		out := false
		for _, i := range ms {
			if out = v.wayOut(i, inCycle, waits, &st); out {
				break
			}
		}
		if out {
			continue
		}
		// A node entered from outside the cycle as well as by an edge of
		// it that is not a jump back may start a second way round it.
		for _, i := range ms {
			outside, inside := false, false
			for _, ei := range g.In[i] {
				e := g.Edges[ei]
				switch {
				case v.w.role(g.Nodes[e.From]) == node.RoleLoopEnd:
				case !inCycle(e.From):
					outside = true
				case !e.Back:
					inside = true
				}
			}
			if outside && inside {
				st.entries = append(st.entries, g.Nodes[i].ID)
			}
		}
		v.reportCycle(ms, inCycle, &st)
	}
}

// cycleStops are the ways a cycle may stop that no edge was written for,
// by node id.
type cycleStops struct {
	routes []string // may return a _route no edge takes
	fails  []string // a failure on_error sends nowhere (the phrase)
	waits  []string // may wait for a signal that never comes
	forks  []string // send the run round the cycle by several edges at once
	// entries are entered from outside the cycle and by one of its edges
	// that is not a jump back.
	entries []string
}

func (st *cycleStops) none() bool {
	return len(st.routes)+len(st.fails)+len(st.waits)+len(st.forks)+len(st.entries) == 0
}

// loopEdge reports whether e is one of a loop's own edges: its body
// handle, or its endloop's jump back.
func (v *validator) loopEdge(e GraphEdge) bool {
	from := v.g.Nodes[e.From]
	return v.w.role(from) == node.RoleLoopEnd || e.On == "body" && v.w.isLoop(from)
}

// selfLoop reports whether node i has an edge to itself.
func (v *validator) selfLoop(i int) bool {
	for _, ei := range v.g.Out[i] {
		if e := v.g.Edges[ei]; e.To == i && !v.loopEdge(e) {
			return true
		}
	}
	return false
}

// knownNodes reports whether every node of ms has a known kind and its
// own id, and none is a trigger: other errors are reported about them,
// and what they may do is not known.
func (v *validator) knownNodes(ms []int) bool {
	for _, i := range ms {
		spec := v.specs[i]
		if spec == nil || spec.Category == node.Trigger || v.g.Index[v.g.Nodes[i].ID] != i {
			return false
		}
	}
	return true
}

// wayOut reports whether node i of a cycle has a way out of it: a handle
// it may take none of whose edges goes back into the cycle (the handle's
// edges leave it, or there are none and the branch ends there). Else it
// adds to st the ways the node may stop the cycle that no edge was
// written for.
func (v *validator) wayOut(i int, inCycle func(int) bool, waits []bool, st *cycleStops) bool {
	g := v.g
	n, spec := g.Nodes[i], v.specs[i]
	// edges reports whether node i has edges by handle h, and to how many
	// nodes of the cycle they go.
	edges := func(h string) (has bool, back int) {
		var to []int
		for _, ei := range g.Out[i] {
			if e := g.Edges[ei]; e.On == h && !v.loopEdge(e) {
				has = true
				if inCycle(e.To) && !slices.Contains(to, e.To) {
					to = append(to, e.To)
				}
			}
		}
		return has, len(to)
	}
	forks := false
	// Whether a handle it takes leads out; and whether it goes round by
	// more than one edge.
	leads := func(h string) bool {
		_, back := edges(h)
		forks = forks || back > 1
		return back == 0
	}
	// What it does when it runs, or, disabled, when it is skipped.
	var takes []string
	switch {
	case n.Disabled:
		takes = []string{spec.FallThrough}
	default:
		for _, h := range spec.AllHandles(n.Params) {
			switch {
			case h == HandleErrorName,
				h == "body" && v.w.isLoop(n),
				h == HandleTimeoutName && spec.Role == node.RoleWait && n.Timeout == nil:
				continue
			}
			takes = append(takes, h)
		}
		if spec.Routes {
			// A routed handle with an edge is a way it is meant to go.
			for _, ei := range g.Out[i] {
				if e := g.Edges[ei]; e.On != HandleErrorName && !v.loopEdge(e) && !slices.Contains(takes, e.On) {
					takes = append(takes, e.On)
				}
			}
		}
	}
	for _, h := range takes {
		if leads(h) {
			return true
		}
	}
	// A failure, were it only at max_visits: on_error says where it goes.
	switch onErr := v.onError(n); onErr {
	case OnErrorRoute, OnErrorContinue:
		h := HandleErrorName
		if onErr == OnErrorContinue {
			h = node.HandleDefault
		}
		switch has, _ := edges(h); {
		case onErr == OnErrorContinue && v.inForEach(i):
			st.fails = append(st.fails, fmt.Sprintf("node %q fails (on_error: continue ends its foreach item)", n.ID))
		case !has:
			st.fails = append(st.fails, fmt.Sprintf("node %q fails (on_error: %s, and no edge by its %s handle)", n.ID, onErr, handleName(h)))
		case leads(h):
			return true
		}
	}
	if forks {
		st.forks = append(st.forks, n.ID)
	}
	if n.Disabled {
		return false
	}
	if spec.Routes && (spec.RoutesWhen == nil || spec.RoutesWhen(n.Params)) && !v.childNeverRoutes(n) {
		st.routes = append(st.routes, n.ID)
	}
	if v.mayWait(i) || waits[i] {
		st.waits = append(st.waits, n.ID)
	}
	return false
}

// childNeverRoutes reports whether n runs a child workflow, read with its
// parent, whose outputs hold no _route: a subworkflow's output is its
// child's outputs (the outputs it declares, or else one per node that ends
// a path, by id), and only a _route among them routes.
func (v *validator) childNeverRoutes(n *Node) bool {
	cw, ok := v.childOf[n.ID]
	if !ok {
		return false
	}
	if len(cw.Outputs) > 0 {
		return !slices.ContainsFunc(cw.Outputs, func(o *Output) bool { return o.Name == "_route" })
	}
	return !slices.ContainsFunc(cw.Nodes, func(c *Node) bool { return c.ID == "_route" })
}

// inForEach reports whether node i's innermost loop is a foreach: on_error:
// continue ends the item there.
func (v *validator) inForEach(i int) bool {
	return v.home != nil && v.home[i] >= 0 && v.w.role(v.g.Nodes[v.home[i]]) == node.RoleForEach
}

// mayWait reports whether node i may wait for a signal with no timeout,
// or run a child workflow that may: its run may stay there until it is
// cancelled.
func (v *validator) mayWait(i int) bool {
	n, spec := v.g.Nodes[i], v.specs[i]
	if spec == nil || n.Disabled {
		return false
	}
	if waitsForSignal(n, spec) {
		return true
	}
	if spec.Role == node.RoleSubworkflow {
		if cw, ok := v.childOf[n.ID]; ok {
			return v.childMayWait(cw)
		}
		return true
	}
	return spec.RunsChildren
}

// waitsForSignal reports whether n may wait for a signal with no timeout.
func waitsForSignal(n *Node, spec *node.Spec) bool {
	if spec.Role == node.RoleWait {
		u, ok := n.Params["until"].(string)
		return ok && (u == "signal" || strings.Contains(u, "{{")) && n.Timeout == nil
	}
	return spec.Parks != nil && spec.Parks(n.Params)
}

// childMayWait reports whether a child workflow, read with its parent,
// holds a node that may wait for a signal or runs children of its own
// (which may): a child of plain nodes does not keep its parent's run
// waiting.
func (v *validator) childMayWait(cw *Workflow) bool {
	for _, n := range cw.Nodes {
		spec, ok := v.reg.Lookup(n.Type)
		if ok && !n.Disabled && (waitsForSignal(n, spec) || spec.Role == node.RoleSubworkflow || spec.RunsChildren) {
			return true
		}
	}
	return false
}

// bodiesThatWait returns, by node, whether it is a loop or foreach whose
// body (nested bodies included) holds a node that may wait (mayWait).
func (v *validator) bodiesThatWait() []bool {
	waits := make([]bool, len(v.g.Nodes))
	if v.home == nil {
		return waits
	}
	for i := range v.g.Nodes {
		if !v.mayWait(i) {
			continue
		}
		for h := v.home[i]; h >= 0 && !waits[h]; h = v.home[h] {
			waits[h] = true
		}
	}
	return waits
}

// reportCycle reports the cycle ms, which no node can leave by an edge:
// an error, or a warning when st says how it may stop all the same.
func (v *validator) reportCycle(ms []int, inCycle func(int) bool, st *cycleStops) {
	g := v.g
	first := g.Nodes[ms[0]]
	path := v.cyclePath(ms[0], inCycle)
	ids := make([]string, len(path))
	for k, i := range path {
		ids[k] = g.Nodes[i].ID
	}
	name := "cycle " + strings.Join(ids, " → ")
	if len(path)-1 < len(ms) {
		var rest []string
		for _, i := range ms {
			if !slices.Contains(path, i) {
				rest = append(rest, g.Nodes[i].ID)
			}
		}
		name += ", with " + listIDs(rest, "and") + " joined to it,"
	}
	var exits []string
	for _, i := range ms {
		for _, ei := range g.Out[i] {
			if e := g.Edges[ei]; !v.loopEdge(e) && !inCycle(e.To) {
				exits = append(exits, g.Nodes[i].ID+" → "+g.Nodes[e.To].ID)
			}
		}
	}
	leaves := "no edge leaves it"
	if len(exits) > 0 {
		if len(exits) > 3 {
			exits = append(exits[:3], "…")
		}
		leaves = "the edges that leave it (" + strings.Join(exits, ", ") + ") are never taken without one that goes round it again"
	}
	limit := v.visitLimits(ms)
	const fix = "add an if, switch or loop that routes out of it"
	if st.none() {
		v.d.errorf(first.Pos, "", first.ID, "%s has no way out: %s, so a run that reaches it fails when a node reaches max_visits (%s); %s", name, leaves, limit, fix)
		return
	}
	var unless []string
	if len(st.routes) > 0 {
		unless = append(unless, "node "+listIDs(quoted(st.routes), "or")+" returns a _route no edge takes")
	}
	unless = append(unless, st.fails...)
	if len(st.waits) > 0 {
		unless = append(unless, "the run waits at "+listIDs(quoted(st.waits), "or")+" for a signal that never comes")
	}
	if len(st.forks)+len(st.entries) > 0 {
		var from []string
		if len(st.forks) > 0 {
			from = append(from, "from "+listIDs(quoted(st.forks), "and"))
		}
		if len(st.entries) > 0 {
			from = append(from, "into "+listIDs(quoted(st.entries), "and")+" from outside it")
		}
		unless = append(unless, "the branches that run side by side on it ("+strings.Join(from, "; ")+") cut one another short")
	}
	if len(unless) > 3 {
		unless = append(unless[:3], "…")
	}
	v.d.warnf(first.Pos, "", first.ID, "%s may have no way out: %s; unless %s, a run that reaches it fails when a node reaches max_visits (%s); %s", name, leaves, strings.Join(unless, ", or "), limit, fix)
}

func quoted(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.Quote(id)
	}
	return out
}

// cyclePath returns a shortest cycle through node start within the cycle,
// start first and last.
func (v *validator) cyclePath(start int, inCycle func(int) bool) []int {
	g := v.g
	prev := map[int]int{}
	queue := []int{start}
	end := -1
	for len(queue) > 0 && end < 0 {
		c := queue[0]
		queue = queue[1:]
		for _, ei := range g.Out[c] {
			e := g.Edges[ei]
			if v.loopEdge(e) || !inCycle(e.To) {
				continue
			}
			if e.To == start {
				end = c
				break
			}
			if _, seen := prev[e.To]; !seen {
				prev[e.To] = c
				queue = append(queue, e.To)
			}
		}
	}
	// Walk back from the node that closes the cycle.
	path := []int{start}
	for c := end; c >= 0 && c != start; c = prev[c] {
		path = append(path, c)
	}
	path = append(path, start)
	slices.Reverse(path)
	return path
}

// visitLimits is the max_visits of the nodes of ms: one number, or the
// smallest and the largest.
func (v *validator) visitLimits(ms []int) string {
	lo, hi := -1, -1
	for _, i := range ms {
		m := v.w.MaxVisitsOf(v.g.Nodes[i])
		if lo < 0 || m < lo {
			lo = m
		}
		if m > hi {
			hi = m
		}
	}
	if lo == hi {
		return groupDigits(lo)
	}
	return groupDigits(lo) + " to " + groupDigits(hi)
}

// listIDs is "a", "a and b", "a, b and c" (with "or": "a, b or c").
func listIDs(ids []string, and string) string {
	if len(ids) <= 1 {
		return strings.Join(ids, "")
	}
	return strings.Join(ids[:len(ids)-1], ", ") + " " + and + " " + ids[len(ids)-1]
}
