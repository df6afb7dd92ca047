package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/skeinhq/skein/internal/plainjson"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// ReuseQuery describes a task about to run, for a host that can answer it
// from an earlier run (resume reuses steps with the same hash; rerun --pin
// reuses named nodes).
type ReuseQuery struct {
	Node      string
	Visit     int
	Iteration int
	Hash      string
}

// Reused is an earlier step's result given back instead of running the
// node.
type Reused struct {
	Output     map[string]any
	Directives map[string]any
	Pinned     bool // reused because the user pinned the node, not by hash
	// Kept marks the run's own step from before it parked, given back as
	// the run goes on after a signal or a timer: it is recorded as it was
	// (neither cached nor pinned), and its usage, counted when it ran, is
	// not counted again.
	Kept bool
	// StartedAt and FinishedAt are, for a kept step, when it ran: its
	// record keeps them.
	StartedAt, FinishedAt time.Time
	// Mocked marks an answer a test gave (skein test's mocks): the step
	// is recorded neither cached nor pinned but mocked, and its usage
	// (a _token_usage directive) counts as if the node had run.
	Mocked bool
	// Err, with Mocked, fails the attempt with this error instead of
	// answering with Output.
	Err *node.Error
	// Miss, when the answer is no, says why an earlier result of the same
	// node and hash could not be reused (it was stored masked); the driver
	// shows it as a warning.
	Miss string
}

// ConfigHash is SHA-256 over the canonical node definition, its resolved
// parameters, the loop context, and the hashes of the steps that fed it,
// so a change anywhere upstream changes every hash after it.
func ConfigHash(def []byte, params map[string]any, loop map[string]any, upstream []string) string {
	// The bytes hashed, in one buffer: def, 0, params, 0, loop (when
	// there is one), 0, then each upstream hash in order and a 0.
	bp := hashBufs.Get().(*[]byte)
	b := append((*bp)[:0], def...)
	b = append(b, 0)
	b = appendCanonical(b, params)
	b = append(b, 0)
	if loop != nil {
		b = appendCanonical(b, loop)
	}
	b = append(b, 0)
	up := upstream
	if len(up) > 1 && !slices.IsSorted(up) {
		up = slices.Sorted(slices.Values(upstream))
	}
	for _, u := range up {
		b = append(append(b, u...), 0)
	}
	sum := sha256.Sum256(b)
	if cap(b) <= maxHashBuf {
		*bp = b
		hashBufs.Put(bp)
	}
	return hex.EncodeToString(sum[:])
}

// hashBufs are the buffers of ConfigHash; one larger than maxHashBuf (a
// big parameter) is not kept.
var hashBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

const maxHashBuf = 64 << 10

// NodeDef returns the canonical JSON of a node's definition, as
// ConfigHash takes it: the one its plan keeps (NewPlan), else made now.
func NodeDef(pn *PlanNode) []byte {
	if pn.Def != nil {
		return pn.Def
	}
	return defOf(pn)
}

// defOf returns the canonical JSON of a node's definition.
func defOf(pn *PlanNode) []byte { return nodeDef(pn.Node) }

// nodeDef returns the canonical JSON of n's definition.
func nodeDef(n *workflow.Node) []byte { return canonical(n.Map()) }

// canonical is m as json.Marshal writes it (keys sorted, <, > and &
// escaped): the text a hash is taken over, the same from one version to
// the next.
func canonical(m map[string]any) []byte { return appendCanonical(nil, m) }

// appendCanonical appends canonical(m) to b.
func appendCanonical(b []byte, m map[string]any) []byte {
	n := len(b)
	if b, ok := plainjson.AppendMap(b, m, true); ok {
		return b
	}
	j, _ := json.Marshal(m)
	return append(b[:n], j...)
}

// upstreamHashes returns the latest step hashes of the nodes with edges
// into pn (known at the time the task starts). Nodes the scheduler settles
// itself (merge, endloop, triggers) have no hash; their own inputs stand in
// for them.
func (rs *runState) upstreamHashes(pn *PlanNode) []string {
	return UpstreamHashes(rs.plan, pn, rs.hashes)
}

// UpstreamHashes returns the hashes, of those in hashes (by node index:
// the latest succeeded step's config hash of each node), that a task of
// pn depends on (see ConfigHash): its upstream nodes', walking through
// the nodes that have none.
func UpstreamHashes(plan *Plan, pn *PlanNode, hashes []string) []string {
	var out []string
	seen := map[int]bool{pn.Index: true}
	var walk func(i int)
	walk = func(i int) {
		for _, ei := range plan.G.In[i] {
			from := plan.G.Edges[ei].From
			if seen[from] {
				continue
			}
			seen[from] = true
			if h := hashes[from]; h != "" {
				out = append(out, h)
			} else {
				walk(from)
			}
		}
	}
	walk(pn.Index)
	return out
}

// MockQuery is a node's visit a mock may answer (runner.Options.Mock, skein test).
type MockQuery struct {
	Node      string
	Visit     int
	Iteration int
}

// MockAnswer is a mock's answer for a node: its output and directives, or
// Err to fail the attempt with.
type MockAnswer struct {
	Output     map[string]any
	Directives map[string]any
	Err        *node.Error
}

// MockReuse is the reuse hook (Host.Reuse) of a mock, falling back to
// reuse.
func MockReuse(mock func(MockQuery) (MockAnswer, bool), reuse func(ReuseQuery) (Reused, bool)) func(ReuseQuery) (Reused, bool) {
	return func(q ReuseQuery) (Reused, bool) {
		if a, ok := mock(MockQuery{Node: q.Node, Visit: q.Visit, Iteration: q.Iteration}); ok {
			return Reused{Mocked: true, Output: a.Output, Directives: a.Directives, Err: a.Err}, true
		}
		if reuse != nil {
			return reuse(q)
		}
		return Reused{}, false
	}
}
