// Package upstream is what one node of a workflow needs to run on its
// own: the nodes upstream of it, and the workflow cut after it. The web
// editor's "Run this node" runs such a cut with the upstream nodes'
// outputs pinned from an earlier run, so that only the node runs.
package upstream

import (
	"fmt"
	"slices"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Of returns the ids of the nodes upstream of id in w, in file order:
// every node from which edges lead to it (an endloop's jump back
// included). A node on a cycle (a loop's body, the loop itself) is
// visited again after it runs, so it cannot run on its own: an error.
func Of(w *workflow.Workflow, id string) ([]string, error) {
	g := w.Graph()
	at, ok := g.Index[id]
	if !ok {
		return nil, fmt.Errorf("the workflow has no node %q", id)
	}
	seen := make([]bool, len(g.Nodes))
	queue := []int{at}
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, ei := range g.In[i] {
			if from := g.Edges[ei].From; !seen[from] {
				seen[from] = true
				queue = append(queue, from)
			}
		}
	}
	if seen[at] {
		return nil, fmt.Errorf("node %q is on a loop, which runs it again after it; run the whole workflow instead", id)
	}
	var out []string
	for i, n := range g.Nodes {
		if seen[i] {
			out = append(out, n.ID)
		}
	}
	return out, nil
}

// Cut is the workflow of file's text src, validated against reg, cut
// after node id: id, the nodes upstream of it and the edges between them.
// The cut has no outputs (a run's result is then id's output) and no
// delivery; the upstream nodes keep no checks or expect (they are not
// run again). Its Source is src: a run of it records the whole text as
// the version it ran. Needed are the upstream nodes that run (not
// disabled), whose outputs a run of the cut must be given.
func Cut(file string, src []byte, reg *node.Registry, id string) (cut *workflow.Workflow, needed []string, err error) {
	w, ds := workflow.LoadSource(file, src, reg)
	if w == nil || ds.HasErrors() {
		return nil, nil, fmt.Errorf("%s is not valid: %s", file, ds.Error())
	}
	up, err := Of(w, id)
	if err != nil {
		return nil, nil, err
	}
	// A fresh decoding, so that nothing of the whole workflow (its index of
	// nodes) stays in the cut.
	cut, _ = workflow.Decode(file, src)
	keep := map[string]bool{id: true}
	for _, u := range up {
		keep[u] = true
	}
	cut.Nodes = slices.DeleteFunc(cut.Nodes, func(n *workflow.Node) bool { return !keep[n.ID] })
	cut.Edges = slices.DeleteFunc(cut.Edges, func(e *workflow.Edge) bool { return !keep[e.From] || !keep[e.To] })
	cut.Outputs, cut.Delivery = nil, nil
	for _, n := range cut.Nodes {
		if n.ID == id {
			continue
		}
		n.Checks, n.Expect = nil, ""
		if !n.Disabled {
			needed = append(needed, n.ID)
		}
	}
	if ds := workflow.Validate(cut, reg); ds.HasErrors() {
		return nil, nil, fmt.Errorf("%s cut after node %s is not valid: %s", file, id, ds.Error())
	}
	return cut, needed, nil
}
