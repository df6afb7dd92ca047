package workflow

import "github.com/skeinhq/skein/node"

// Graph is the workflow's nodes and edges by index, with back-edges marked:
// the edges from an endloop to its loop (written or implicit) and any other
// edge that closes a cycle. Everything after validation (planning, the
// scheduler) works on it.
type Graph struct {
	Nodes []*Node
	Index map[string]int
	Edges []GraphEdge
	// Out and In list edge indexes by node.
	Out [][]int
	In  [][]int
	// Entries are the nodes with no incoming forward edge, in file order.
	Entries []int
}

// GraphEdge is an edge between node indexes.
type GraphEdge struct {
	*Edge
	From, To int
	Back     bool
}

// Graph builds the graph. Edges naming unknown nodes are left out (Validate
// reports them). The endloop kind is recognised by its type name.
func (w *Workflow) Graph() *Graph {
	g := &Graph{Nodes: w.Nodes, Index: make(map[string]int, len(w.Nodes))}
	for i, n := range w.Nodes {
		if _, dup := g.Index[n.ID]; !dup && n.ID != "" {
			g.Index[n.ID] = i
		}
	}
	g.Out = make([][]int, len(w.Nodes))
	g.In = make([][]int, len(w.Nodes))
	add := func(e *Edge, back bool) {
		from, ok1 := g.Index[e.From]
		to, ok2 := g.Index[e.To]
		if !ok1 || !ok2 {
			return
		}
		g.Edges = append(g.Edges, GraphEdge{Edge: e, From: from, To: to, Back: back})
		i := len(g.Edges) - 1
		g.Out[from] = append(g.Out[from], i)
		g.In[to] = append(g.In[to], i)
	}
	hasWritten := map[[2]string]bool{}
	for _, e := range w.Edges {
		back := false
		if src := w.Node(e.From); src != nil && w.role(src) == node.RoleLoopEnd {
			if l, _ := src.Params["loop"].(string); l == e.To {
				back = true
			}
		}
		hasWritten[[2]string{e.From, e.To}] = true
		add(e, back)
	}
	for _, n := range w.Nodes {
		if w.role(n) != node.RoleLoopEnd {
			continue
		}
		l, _ := n.Params["loop"].(string)
		if l == "" || hasWritten[[2]string{n.ID, l}] {
			continue
		}
		if target := w.Node(l); target != nil && w.isLoop(target) {
			add(&Edge{From: n.ID, To: l, Pos: n.Pos, Implicit: true}, true)
		}
	}
	g.markBackEdges()
	for i := range g.Nodes {
		entry := true
		for _, ei := range g.In[i] {
			if !g.Edges[ei].Back {
				entry = false
				break
			}
		}
		if entry {
			g.Entries = append(g.Entries, i)
		}
	}
	return g
}

// markBackEdges finds edges that close a cycle with an iterative DFS, first
// from nodes without incoming edges (endloop edges aside), then from any node
// not yet seen, in file order so the result is stable.
func (g *Graph) markBackEdges() {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(g.Nodes))
	type frame struct{ node, next int }
	var stack []frame
	visit := func(root int) {
		color[root] = grey
		stack = append(stack[:0], frame{root, 0})
		for len(stack) > 0 {
			top := &stack[len(stack)-1]
			if top.next == len(g.Out[top.node]) {
				color[top.node] = black
				stack = stack[:len(stack)-1]
				continue
			}
			ei := g.Out[top.node][top.next]
			top.next++
			e := &g.Edges[ei]
			if e.Back {
				continue
			}
			switch color[e.To] {
			case grey:
				e.Back = true
			case white:
				color[e.To] = grey
				stack = append(stack, frame{e.To, 0})
			}
		}
	}
	for i := range g.Nodes {
		root := true
		for _, ei := range g.In[i] {
			if !g.Edges[ei].Back {
				root = false
				break
			}
		}
		if root && color[i] == white {
			visit(i)
		}
	}
	for i := range g.Nodes {
		if color[i] == white {
			visit(i)
		}
	}
}

// Reachable returns which nodes can be reached from the given starts,
// following every edge.
func (g *Graph) Reachable(starts []int) []bool {
	seen := make([]bool, len(g.Nodes))
	queue := append([]int(nil), starts...)
	for _, s := range starts {
		seen[s] = true
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, ei := range g.Out[n] {
			to := g.Edges[ei].To
			if !seen[to] {
				seen[to] = true
				queue = append(queue, to)
			}
		}
	}
	return seen
}

// SCC returns the strongly connected components, with comp[i] the component
// of node i, numbered in reverse topological order (Tarjan). skip, when not
// nil, leaves edges out.
func (g *Graph) SCC(skip func(GraphEdge) bool) (comp []int, count int) {
	n := len(g.Nodes)
	index := make([]int, n)
	low := make([]int, n)
	onStack := make([]bool, n)
	comp = make([]int, n)
	for i := range index {
		index[i] = -1
	}
	var stack []int
	next := 0
	type frame struct{ v, ei int }
	var call []frame
	for root := 0; root < n; root++ {
		if index[root] >= 0 {
			continue
		}
		call = append(call[:0], frame{root, 0})
		index[root], low[root] = next, next
		next++
		stack = append(stack, root)
		onStack[root] = true
		for len(call) > 0 {
			f := &call[len(call)-1]
			v := f.v
			if f.ei < len(g.Out[v]) {
				e := g.Edges[g.Out[v][f.ei]]
				f.ei++
				if skip != nil && skip(e) {
					continue
				}
				w := e.To
				if index[w] < 0 {
					index[w], low[w] = next, next
					next++
					stack = append(stack, w)
					onStack[w] = true
					call = append(call, frame{w, 0})
				} else if onStack[w] && index[w] < low[v] {
					low[v] = index[w]
				}
				continue
			}
			call = call[:len(call)-1]
			if len(call) > 0 {
				p := call[len(call)-1].v
				if low[v] < low[p] {
					low[p] = low[v]
				}
			}
			if low[v] == index[v] {
				for {
					w := stack[len(stack)-1]
					stack = stack[:len(stack)-1]
					onStack[w] = false
					comp[w] = count
					if w == v {
						break
					}
				}
				count++
			}
		}
	}
	return comp, count
}

// role returns the role of a node's kind in the registry the workflow was
// validated against (node.Default before validation).
func (w *Workflow) role(n *Node) node.Role {
	reg := w.kinds
	if reg == nil {
		reg = node.Default
	}
	if spec, ok := reg.Lookup(n.Type); ok {
		return spec.Role
	}
	return node.RoleAction
}

// isLoop reports whether a node repeats a body: a loop or a foreach.
func (w *Workflow) isLoop(n *Node) bool {
	r := w.role(n)
	return r == node.RoleLoop || r == node.RoleForEach
}
