package scheduler

import (
	"fmt"
	"hash/fnv"
	"math"
	"sort"
	"time"

	"github.com/cenkalti/backoff/v5"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/node"
)

// Edge states inside a frame.
const (
	edgeOpen uint8 = iota
	edgeFired
	edgeDead
)

// HandleTimeout is the handle a wait node follows when no signal came
// before its timeout.
const HandleTimeout = "timeout"

// MaxBackoff caps the wait between retries.
const MaxBackoff = 5 * time.Minute

// Run is the scheduler's state for one run. Its methods are the events; each
// returns the actions that follow. It is not safe for concurrent use: a
// driver feeds it events one at a time.
type Run struct {
	plan    *Plan
	runID   string
	frames  map[int]*frame
	nextFr  int
	tasks   map[int64]*taskRef
	nextID  int64
	timers  map[int64]*timerRef
	awaits  map[int64]*awaitRef // by task id
	visits  []int
	latest  []map[string]any
	vars    map[string]any
	reach   []bool
	running int
	// byTopo is each home's region in topological order (the run's own
	// under -1), for planning its frames; made on first use.
	byTopo map[int][]int

	// messages is the run's message list (_messages).
	messages []any

	started    bool
	cancelling bool
	failing    bool
	finished   bool
	failErr    *node.Error

	act *Actions
	// spare is an Actions a driver handed back (Recycle), whose slices
	// the next call fills.
	spare *Actions
}

type taskRef struct {
	task  *Task
	frame *frame
	slot  int
}

type timerKind uint8

const (
	timerRetry timerKind = iota
	timerDelay
	timerTimeout // a signal wait's timeout
)

type timerRef struct {
	kind    timerKind
	frame   *frame
	node    int
	task    *Task          // retry: the task to run again
	handles []string       // delay: what to fire when the timer ends
	output  map[string]any // delay: the output to publish
}

// awaitRef is a wait node's step waiting for a signal.
type awaitRef struct {
	frame *frame
	node  int
	task  *Task
	out   map[string]any
	timer int64 // its timeout, 0 when it has none
	// name is what its signal is recorded under (SignalName); resume is a
	// parked kind's _resume.
	name   string
	resume any
}

// frame holds the state of one home: the run itself, one pass of a loop
// body, or one item of a foreach.
type frame struct {
	id     int
	parent *frame
	owner  int // loop or foreach node, -1 for the run
	slotOf int // the owner's slot in the parent frame
	region []int
	pass   int
	loop   map[string]any
	st     []nstate
	edge   []uint8
	// cause says why each dead edge died, for the steps it leaves
	// skipped; a held exit keeps the cause it would die with.
	cause  []edgeCause
	out    []map[string]any
	active int // running tasks and timers
	// last is the output of the succeeded node that comes last in the
	// plan's topological order (a foreach item's result); lastTopo is its
	// rank.
	last     map[string]any
	lastTopo int
	abort    bool // a foreach item that failed with on_error: continue
	// abortErr is the error that failed the foreach item.
	abortErr *node.Error
	closed   bool
}

// edgeCause is why an edge died: the skip reason it gives the node it
// leads to, and the handle its branch took for branch_not_taken.
type edgeCause struct {
	reason string
	taken  string
}

type nstate struct {
	status   Status
	visits   int
	resolved int
	fired    int
	started  bool // merge any: already activated
	loop     *loopState
	task     int64
	timer    int64 // the retry or delay timer set for the node, 0 when none
	visit    int   // the run-wide visit number of the current activation
	// planned is set while visit is reserved for the node's next
	// activation, recorded pending, and not yet used.
	planned bool
}

// busy reports whether the node has work under way in its frame: a task,
// a loop body, or a timer.
func (st *nstate) busy() bool {
	return st.status == StatusRunning || st.status == StatusWaiting || st.timer != 0
}

type loopState struct {
	passes   int
	items    []any
	next     int
	inFlight int
	done     int
	results  []any
	failed   int // foreach items that failed
}

// NewRun makes the scheduler state for a run of plan.
func NewRun(plan *Plan, runID string) *Run {
	n := len(plan.Nodes)
	return &Run{
		plan:   plan,
		runID:  runID,
		frames: map[int]*frame{},
		tasks:  map[int64]*taskRef{},
		timers: map[int64]*timerRef{},
		awaits: map[int64]*awaitRef{},
		visits: make([]int, n),
		latest: make([]map[string]any, n),
		vars:   map[string]any{},
	}
}

// Vars returns the run's variables.
func (r *Run) Vars() map[string]any { return r.vars }

// Latest returns the last output of every node that produced one, by id,
// with success and error fields.
func (r *Run) Latest() map[string]any {
	out := make(map[string]any, len(r.latest))
	for i, o := range r.latest {
		if o != nil {
			out[r.plan.Nodes[i].ID] = o
		}
	}
	return out
}

// LatestOf returns the last output of the plan's node i, with success and
// error fields, or nil when it produced none: Latest()[id] without making
// the map of every node.
func (r *Run) LatestOf(i int) map[string]any { return r.latest[i] }

func (r *Run) begin() *Actions {
	if r.spare != nil {
		r.act, r.spare = r.spare, nil
		return r.act
	}
	r.act = &Actions{}
	return r.act
}

// Recycle hands back Actions a call returned, once the driver is done with
// them and keeps nothing of their slices (what it keeps, it copied): the
// next call fills the same slices instead of growing new ones. A driver
// need not call it.
func (r *Run) Recycle(a *Actions) {
	if a == nil {
		return
	}
	// What the scheduler filled, or more when the driver appended: a
	// driver may have shortened a slice it read.
	clearFilled(a.Start, a.filled[0])
	clearFilled(a.Timers, a.filled[1])
	clearFilled(a.Steps, a.filled[2])
	clearFilled(a.Events, a.filled[3])
	clearFilled(a.Awaits, a.filled[4])
	*a = Actions{Start: a.Start[:0], Timers: a.Timers[:0], Steps: a.Steps[:0], Events: a.Events[:0], Awaits: a.Awaits[:0], Stop: a.Stop[:0]}
	r.spare = a
}

// clearFilled clears s up to the filled length n, or its own length when
// longer, within its capacity (a driver may have put another slice in
// place).
func clearFilled[T any](s []T, n int) {
	clear(s[:min(max(n, len(s)), cap(s))])
}

func (r *Run) end() *Actions {
	a := r.act
	r.act = nil
	if a != nil {
		a.filled = [5]int{len(a.Start), len(a.Timers), len(a.Steps), len(a.Events), len(a.Awaits)}
	}
	return a
}

func (r *Run) event(typ string, pn *PlanNode, f *frame, data map[string]any) {
	ev := Event{Type: typ, Data: data}
	if pn != nil {
		ev.Node = pn.ID
		ev.Visit = r.visits[pn.Index]
		if f != nil {
			ev.Iteration = f.pass
			ev.Visit = f.st[pn.Slot].visit
		}
	}
	r.act.Events = append(r.act.Events, ev)
}

// skipStep records the step of a node that did not run, with why (and,
// for branch_not_taken, the handle its branch took).
func (r *Run) skipStep(f *frame, pn *PlanNode, attempt int, why edgeCause, taskID int64) {
	r.step(f, pn, attempt, StatusSkipped, nil, nil, taskID)
	su := &r.act.Steps[len(r.act.Steps)-1]
	su.SkipReason = why.reason
	if why.reason == SkipBranchNotTaken {
		su.TakenHandle = why.taken
	}
}

// stopStep records the step of a node that never ran because the run
// stops or the foreach item f belongs to failed: cancelled when the run
// was cancelled, else skipped with why (run_failed, item_failed).
func (r *Run) stopStep(f *frame, pn *PlanNode, attempt int, taskID int64) {
	switch {
	case r.failing: // a failure before a cancel ends the run failed
		r.skipStep(f, pn, attempt, edgeCause{reason: SkipRunFailed}, taskID)
	case r.cancelling:
		f.st[pn.Slot].status = StatusCancelled
		r.step(f, pn, attempt, StatusCancelled, nil, nil, taskID)
	case f.abort:
		r.skipStep(f, pn, attempt, edgeCause{reason: SkipItemFailed}, taskID)
	default:
		r.skipStep(f, pn, attempt, r.whyDead(f, pn), taskID)
	}
}

// planFrame reserves the next visit of each reachable node of f that has no
// reserved visit and no work under way, and records its step pending: the
// steps a frame may run are in the step log before they start. nodes are
// the nodes to plan (f's region when nil), in topological order.
func (r *Run) planFrame(f *frame, nodes []int) {
	if nodes == nil {
		if nodes = r.byTopo[f.owner]; nodes == nil {
			nodes = make([]int, len(f.region))
			copy(nodes, f.region)
			sort.Slice(nodes, func(i, j int) bool { return r.plan.Nodes[nodes[i]].topo < r.plan.Nodes[nodes[j]].topo })
			if r.byTopo == nil {
				r.byTopo = map[int][]int{}
			}
			r.byTopo[f.owner] = nodes
		}
	}
	for _, i := range nodes {
		pn := r.plan.Nodes[i]
		st := &f.st[pn.Slot]
		if !r.reach[i] || st.planned || st.status != StatusPending {
			continue
		}
		r.visits[i]++
		st.visit, st.planned = r.visits[i], true
		r.step(f, pn, 0, StatusPending, nil, nil, 0)
	}
}

// visit gives the node's activation in f its visit number: the one
// reserved when it was planned, else the next.
func (r *Run) visit(f *frame, pn *PlanNode) {
	st := &f.st[pn.Slot]
	if st.planned {
		st.planned = false
		return
	}
	r.visits[pn.Index]++
	st.visit = r.visits[pn.Index]
}

func (r *Run) step(f *frame, pn *PlanNode, attempt int, st Status, out map[string]any, err *node.Error, taskID int64) {
	r.act.Steps = append(r.act.Steps, StepUpdate{
		TaskID: taskID, Node: pn.ID, Index: pn.Index, Visit: f.st[pn.Slot].visit, Iteration: f.pass,
		Attempt: attempt, Status: st, Output: out, Error: err, Loop: f.loop,
	})
}

// StartNodes returns the nodes a run starts from: the given trigger, else
// the manual triggers, else every entry node.
func (p *Plan) StartNodes(trigger string) ([]int, error) {
	if trigger != "" {
		i, ok := p.G.Index[trigger]
		if !ok || p.Nodes[i].ctrl != ctrlTrigger {
			var names []string
			for _, t := range p.Triggers() {
				names = append(names, t.ID)
			}
			return nil, fmt.Errorf("no trigger %q in the workflow (triggers: %v)", trigger, names)
		}
		return []int{i}, nil
	}
	var manual []int
	for _, t := range p.Triggers() {
		if t.Spec.StartsByDefault {
			manual = append(manual, t.Index)
		}
	}
	if len(manual) > 0 {
		return manual, nil
	}
	var entries []int
	for _, e := range p.G.Entries {
		if p.Nodes[e].Home < 0 {
			entries = append(entries, e)
		}
	}
	if len(entries) == 0 && len(p.Nodes) > 0 {
		return nil, fmt.Errorf("the workflow has no entry node (every node has an incoming edge)")
	}
	return entries, nil
}

// Start begins the run from the given start nodes; triggers among them
// output payload.
func (r *Run) Start(starts []int, payload map[string]any) *Actions {
	r.begin()
	r.started = true
	p := r.plan
	r.reach = p.G.Reachable(starts)
	root := r.newFrame(nil, -1, p.rootRegion, len(p.rootEdges), 0, nil)
	r.event(EventExecutionStarted, nil, nil, map[string]any{"starts": r.ids(starts)})
	for i, pn := range p.Nodes {
		if r.reach[i] {
			continue
		}
		r.event(EventWarning, pn, nil, map[string]any{"message": fmt.Sprintf("node %q is not reachable from the start and is ignored", pn.ID)})
		if pn.Home < 0 {
			root.st[pn.Slot].status = StatusSkipped
		}
	}
	// Problems of nodes that never run were warnings when the workflow was
	// validated; the run records them where it ignores the nodes.
	for _, d := range p.W.Ignored() {
		if i, ok := p.G.Index[d.Node]; ok {
			r.event(EventWarning, p.Nodes[i], nil, map[string]any{"message": fmt.Sprintf("node %q, line %d:%d: %s", d.Node, d.Line, d.Col, d.Message)})
		}
	}
	// The whole plan is in the step log from the start: every reachable
	// node of the run's own frame is pending.
	r.planFrame(root, nil)
	// Edges out of ignored nodes never fire.
	for _, i := range p.rootRegion {
		if !r.reach[i] {
			r.killOut(root, p.Nodes[i])
		}
	}
	for _, s := range starts {
		pn := p.Nodes[s]
		if pn.ctrl == ctrlTrigger {
			r.visit(root, pn)
			st := &root.st[pn.Slot]
			st.status, st.visits = StatusSuccess, st.visits+1
			out := withStatus(copyMap(payload), true, "")
			root.out[pn.Slot] = out
			r.latest[s] = out
			r.event(EventNodeStarted, pn, root, nil)
			r.step(root, pn, 1, StatusSuccess, out, nil, 0)
			r.event(EventNodeFinished, pn, root, finished(StatusSuccess))
			r.propagate(root, pn, []string{""})
			continue
		}
		r.activate(root, pn, false)
	}
	r.settle(root)
	return r.end()
}

func (r *Run) ids(idx []int) []string {
	out := make([]string, len(idx))
	for i, x := range idx {
		out[i] = r.plan.Nodes[x].ID
	}
	return out
}

func (r *Run) newFrame(parent *frame, owner int, region []int, nedges int, pass int, loop map[string]any) *frame {
	r.nextFr++
	f := &frame{
		id: r.nextFr, parent: parent, owner: owner, region: region, pass: pass, loop: loop,
		lastTopo: -1,
		st:       make([]nstate, len(region)),
		edge:     make([]uint8, nedges),
		cause:    make([]edgeCause, nedges),
		out:      make([]map[string]any, len(region)),
	}
	for i := range f.st {
		f.st[i].status = StatusPending
	}
	r.frames[f.id] = f
	return f
}

// killOut marks every forward out-edge of pn dead, in frame f, as the
// edges of a node that did not run (dead_path). Edges that leave a cycle
// stay open until the cycle is over (see release).
func (r *Run) killOut(f *frame, pn *PlanNode) {
	for _, ei := range pn.out {
		if slot := r.plan.EdgeSlot[ei]; slot >= 0 && f.edge[slot] == edgeOpen {
			if pn.cycle != nil && r.plan.isExit(ei) {
				if f.cause[slot].reason == "" {
					f.cause[slot] = edgeCause{reason: SkipDeadPath}
				}
				continue
			}
			f.edge[slot] = edgeDead
			f.cause[slot] = edgeCause{reason: SkipDeadPath}
			r.resolve(f, r.plan.G.Edges[ei].To, false)
		}
	}
}

// release kills the held exits of the cycles of f that are over: no member
// has work under way and every edge into the cycle is resolved, so no
// member can run again. Killing exits may end other cycles, so it repeats
// until nothing changes.
func (r *Run) release(f *frame) {
	cycles := r.plan.rootCycles
	if f.owner >= 0 {
		cycles = r.plan.Nodes[f.owner].cycles
	}
	for changed := len(cycles) > 0; changed; {
		changed = false
		for _, c := range cycles {
			if !r.cycleOver(f, c) {
				continue
			}
			for _, ei := range c.exits {
				if slot := r.plan.EdgeSlot[ei]; f.edge[slot] == edgeOpen {
					f.edge[slot] = edgeDead
					if f.cause[slot].reason == "" {
						f.cause[slot] = edgeCause{reason: SkipDeadPath}
					}
					changed = true
					r.resolve(f, r.plan.G.Edges[ei].To, false)
				}
			}
		}
	}
}

func (r *Run) cycleOver(f *frame, c *cycle) bool {
	for _, m := range c.members {
		if f.st[r.plan.Nodes[m].Slot].busy() {
			return false
		}
	}
	for _, ei := range c.entries {
		if f.edge[r.plan.EdgeSlot[ei]] == edgeOpen {
			return false
		}
	}
	return true
}

// propagate resolves pn's out-edges in f: edges whose handle is in
// handles fire, the others die (those leaving a cycle are held open until
// the cycle is over). Then back-edges that fire re-arm their target, so a
// round's forward edges are resolved before the next round starts, whatever
// the order the edges are written in.
func (r *Run) propagate(f *frame, pn *PlanNode, handles []string) {
	g := r.plan.G
	back := false
	// The edges not taken die: the node failed (on_error continue or
	// route), or it took another handle.
	why := edgeCause{reason: SkipBranchNotTaken, taken: handles[0]}
	if f.st[pn.Slot].status == StatusFailed {
		why = edgeCause{reason: SkipUpstreamFailed}
	}
	for _, ei := range pn.out {
		e := g.Edges[ei]
		if e.Back {
			back = true
			continue
		}
		match := contains(handles, e.On)
		slot := r.plan.EdgeSlot[ei]
		if slot < 0 || f.edge[slot] != edgeOpen {
			continue
		}
		if match {
			f.edge[slot] = edgeFired
		} else {
			f.cause[slot] = why
			if pn.cycle != nil && r.plan.isExit(ei) {
				continue // held: the cycle may come round to pn again
			}
			f.edge[slot] = edgeDead
		}
		r.resolve(f, e.To, match)
	}
	if !back || r.cancelling || r.failing {
		return
	}
	for _, ei := range pn.out {
		e := g.Edges[ei]
		if !e.Back || pn.ctrl == ctrlEndLoop && pn.LoopOf == e.To || !contains(handles, e.On) {
			continue
		}
		r.rearm(f, r.plan.Nodes[e.To])
	}
}

// resolve counts one resolved in-edge of node to and acts when the node
// becomes ready or dead.
func (r *Run) resolve(f *frame, to int, fired bool) {
	pn := r.plan.Nodes[to]
	st := &f.st[pn.Slot]
	if st.status != StatusPending {
		return
	}
	st.resolved++
	if fired {
		st.fired++
	}
	if pn.MergeAny && fired && !st.started {
		st.started = true
		r.activate(f, pn, false)
		return
	}
	if st.resolved < len(pn.in) {
		return
	}
	// The body handle of the owning loop counts as a fired input.
	if st.fired+pn.bodyIn > 0 {
		if pn.MergeAny && st.started {
			return
		}
		r.activate(f, pn, false)
		return
	}
	r.skip(f, pn)
}

// skip marks a node whose inputs all died as skipped, and kills its
// out-edges.
func (r *Run) skip(f *frame, pn *PlanNode) {
	st := &f.st[pn.Slot]
	st.status = StatusSkipped
	if r.reach[pn.Index] {
		r.visit(f, pn)
		r.skipStep(f, pn, 0, r.whyDead(f, pn), 0)
	}
	r.killOut(f, pn)
}

// whyDead is why a node whose in-edges all died is skipped: a failure
// before it (upstream_failed) outweighs a branch not taken, which
// outweighs nodes before it that were skipped (dead_path).
func (r *Run) whyDead(f *frame, pn *PlanNode) edgeCause {
	why := edgeCause{reason: SkipDeadPath}
	for _, ei := range pn.in {
		if c := f.cause[r.plan.EdgeSlot[ei]]; weight(c.reason) > weight(why.reason) {
			why = c
		}
	}
	return why
}

// weight orders the reasons an edge died by how much they say (whyDead).
func weight(reason string) int {
	switch reason {
	case SkipUpstreamFailed:
		return 3
	case SkipBranchNotTaken:
		return 2
	case SkipDeadPath:
		return 1
	}
	return 0
}

// rearm makes the target of a back-edge pending again, with the nodes of its
// cycle after it that the last round reached, then starts the target. A
// member is re-armed when an edge from a re-armed node into it was resolved
// (fired or dead) — the last round got to it — and it has no work under way.
// Nodes outside the cycle keep their state: they run at most once per
// frame. A target with work under way is not started a second time.
func (r *Run) rearm(f *frame, t *PlanNode) {
	p := r.plan
	if f.st[t.Slot].busy() {
		r.event(EventWarning, t, f, map[string]any{"message": fmt.Sprintf("a cycle came back to node %q while it was still running; the jump back is ignored", t.ID)})
		return
	}
	reset := make(map[int]bool, len(t.rearm))
	for _, i := range t.rearm { // topological order: t first
		pn := p.Nodes[i]
		if i != t.Index {
			if f.st[pn.Slot].busy() {
				continue
			}
			reached := false
			for _, ei := range pn.in {
				if reset[p.G.Edges[ei].From] && f.edge[p.EdgeSlot[ei]] != edgeOpen {
					reached = true
					break
				}
			}
			if !reached {
				continue
			}
		}
		reset[i] = true
	}
	for _, i := range t.rearm {
		if !reset[i] {
			continue
		}
		pn := p.Nodes[i]
		st := &f.st[pn.Slot]
		*st = nstate{status: StatusPending, visits: st.visits, visit: st.visit, planned: st.planned}
		for _, ei := range pn.in {
			if reset[p.G.Edges[ei].From] {
				f.edge[p.EdgeSlot[ei]] = edgeOpen
				f.cause[p.EdgeSlot[ei]] = edgeCause{}
			}
		}
	}
	// The cycle comes round: its re-armed nodes are planned again.
	var again []int
	for _, i := range t.rearm {
		if reset[i] {
			again = append(again, i)
		}
	}
	r.planFrame(f, again)
	// Count what the re-armed nodes already have from the others.
	for _, i := range t.rearm {
		if !reset[i] {
			continue
		}
		pn := p.Nodes[i]
		st := &f.st[pn.Slot]
		for _, ei := range pn.in {
			switch f.edge[p.EdgeSlot[ei]] {
			case edgeFired:
				st.resolved++
				st.fired++
			case edgeDead:
				st.resolved++
			}
		}
	}
	r.activate(f, t, true)
}

// activate starts a node that is ready.
func (r *Run) activate(f *frame, pn *PlanNode, viaBack bool) {
	st := &f.st[pn.Slot]
	if r.cancelling || r.failing || f.abort {
		return
	}
	if pn.MaxVisits > 0 && st.visits >= pn.MaxVisits {
		r.visit(f, pn)
		st.visits++
		err := &node.Error{Code: "max_visits", Category: node.CategoryExecution, Permanent: true,
			Message: fmt.Sprintf("node %q reached its visit limit (max_visits: %d); the cycle through it did not end", pn.ID, pn.MaxVisits)}
		r.event(EventNodeStarted, pn, f, nil)
		r.fail(f, pn, 1, nil, err, 0)
		return
	}
	st.visits++
	r.visit(f, pn)
	st.started = true
	if pn.Disabled {
		st.status = StatusSkipped
		r.skipStep(f, pn, 0, edgeCause{reason: SkipDisabled}, 0)
		r.event(EventNodeFinished, pn, f, map[string]any{"status": string(StatusSkipped), "disabled": true})
		r.propagate(f, pn, []string{pn.FallThrough})
		return
	}
	if pn.ctrl == ctrlEndLoop || pn.ctrl == ctrlMerge || pn.ctrl == ctrlTrigger {
		out := succeededEmpty
		if pn.ctrl == ctrlMerge {
			out = withStatus(map[string]any{}, true, "")
			if !pn.MergeAny {
				// With wait: any the inputs present would depend on timing.
				out["inputs"] = r.mergeInputs(f, pn)
			}
		}
		st.status = StatusSuccess
		f.out[pn.Slot] = out
		r.latest[pn.Index] = out
		r.event(EventNodeStarted, pn, f, nil)
		r.step(f, pn, 1, StatusSuccess, out, nil, 0)
		r.event(EventNodeFinished, pn, f, finished(StatusSuccess))
		r.propagate(f, pn, []string{""})
		return
	}
	if pn.ctrl == ctrlLoop {
		st.loop = &loopState{}
	}
	r.startTask(f, pn, 1)
}

// mergeInputs returns the outputs of the nodes whose edges into a merge
// fired, by node id.
func (r *Run) mergeInputs(f *frame, pn *PlanNode) map[string]any {
	in := map[string]any{}
	for _, ei := range pn.in {
		if f.edge[r.plan.EdgeSlot[ei]] != edgeFired {
			continue
		}
		from := r.plan.G.Edges[ei].From
		if o := r.outputOf(f, from); o != nil {
			in[r.plan.Nodes[from].ID] = stripStatus(o)
		}
	}
	return in
}

func (r *Run) startTask(f *frame, pn *PlanNode, attempt int) {
	r.resumeTask(f, pn, attempt, nil)
}

// resumeTask starts a task; with resume set, it runs a parked step again
// (its node started already).
func (r *Run) resumeTask(f *frame, pn *PlanNode, attempt int, resume *node.Resume) {
	st := &f.st[pn.Slot]
	r.nextID++
	t := &Task{
		ID: r.nextID, Node: pn, Frame: f.id, Visit: st.visit, Iteration: f.pass,
		Attempt: attempt, Vars: r.vars, Messages: r.messages, Loop: r.loopCtx(f), Resume: resume,
	}
	if st.loop != nil {
		t.Passes = st.loop.passes
	}
	if len(pn.Refs) > 0 {
		t.Nodes = make(map[string]any, len(pn.Refs))
		for _, m := range pn.Refs {
			if o := r.outputOf(f, m); o != nil {
				t.Nodes[r.plan.Nodes[m].ID] = o
			}
		}
	}
	st.status = StatusRunning
	st.task = t.ID
	r.tasks[t.ID] = &taskRef{task: t, frame: f, slot: pn.Slot}
	r.running++
	f.active++
	if attempt == 1 && resume == nil {
		r.event(EventNodeStarted, pn, f, nil)
	}
	r.step(f, pn, attempt, StatusRunning, nil, nil, t.ID)
	r.act.Start = append(r.act.Start, t)
}

func (r *Run) loopCtx(f *frame) map[string]any {
	for ; f != nil; f = f.parent {
		if f.loop != nil {
			return f.loop
		}
	}
	return nil
}

// outputOf finds the output of node m as seen from frame f: from the frame
// that is m's home along f's chain, else m's latest output.
func (r *Run) outputOf(f *frame, m int) map[string]any {
	home := r.plan.Nodes[m].Home
	for c := f; c != nil; c = c.parent {
		if c.owner == home {
			o := c.out[r.plan.Nodes[m].Slot]
			if o != nil || (home >= 0 && r.plan.Nodes[home].ctrl == ctrlForEach) {
				// A foreach item sees only its own body's outputs: items
				// run side by side and must not read each other's.
				return o
			}
			break
		}
	}
	return r.latest[m]
}

// Finished reports the outcome of a task.
func (r *Run) Finished(taskID int64, oc Outcome) *Actions {
	r.begin()
	ref, ok := r.tasks[taskID]
	if !ok {
		return r.end()
	}
	delete(r.tasks, taskID)
	r.running--
	f, pn, t := ref.frame, ref.task.Node, ref.task
	f.active--
	if oc.Err != nil {
		r.failed(f, pn, t, oc)
	} else {
		r.succeeded(f, pn, t, oc)
	}
	r.settle(f)
	r.settleStopping()
	return r.end()
}

// settleStopping settles every frame once the run is stopping: dropped
// timers may have left frames with nothing to do.
func (r *Run) settleStopping() {
	if !r.failing && !r.cancelling {
		return
	}
	for _, f := range r.sortedFrames() {
		r.settle(f)
	}
}

func (r *Run) failed(f *frame, pn *PlanNode, t *Task, oc Outcome) {
	err := oc.Err
	if oc.NotStarted && (r.cancelling || r.failing) {
		// It waited for a slot and never ran: a pending step.
		f.st[pn.Slot].status = StatusSkipped
		r.stopStep(f, pn, t.Attempt, t.ID)
		r.event(EventNodeFinished, pn, f, finished(f.st[pn.Slot].status))
		return
	}
	if r.cancelling && (err.Category == node.CategoryCancelled) {
		f.st[pn.Slot].status = StatusCancelled
		r.step(f, pn, t.Attempt, StatusCancelled, nil, err, t.ID)
		r.event(EventNodeFinished, pn, f, finished(StatusCancelled))
		return
	}
	if r.failing && err.Category == node.CategoryCancelled {
		f.st[pn.Slot].status = StatusCancelled
		r.step(f, pn, t.Attempt, StatusCancelled, nil, err, t.ID)
		return
	}
	if t.Attempt <= pn.Retries && !err.Permanent && !r.cancelling && !r.failing && !f.abort {
		delay := r.backoff(pn, t)
		if err.RetryAfter > delay {
			delay = err.RetryAfter
		}
		f.st[pn.Slot].status = StatusFailed
		r.step(f, pn, t.Attempt, StatusFailed, nil, err, t.ID)
		r.act.Steps[len(r.act.Steps)-1].Retry = true
		r.event(EventRetry, pn, f, map[string]any{"attempt": t.Attempt + 1, "max_attempts": pn.Retries + 1,
			"delay_ms": delay.Milliseconds(), "error": err.Message})
		r.nextID++
		id := r.nextID
		r.timers[id] = &timerRef{kind: timerRetry, frame: f, node: pn.Index, task: t}
		f.st[pn.Slot].timer = id
		f.active++
		r.act.Timers = append(r.act.Timers, Timer{ID: id, Delay: delay, Index: pn.Index, Visit: t.Visit})
		return
	}
	r.fail(f, pn, t.Attempt, oc.Output, err, t.ID)
}

// backoff is retry_backoff × 2^(attempt-1), capped at MaxBackoff, plus up
// to 20% jitter, capped again. The schedule is cenkalti/backoff's
// exponential one without its randomization; the jitter is drawn from the
// task's identity instead, so the scheduler stays deterministic (a replay
// or a resume computes the same delays).
func (r *Run) backoff(pn *PlanNode, t *Task) time.Duration {
	b := backoff.ExponentialBackOff{InitialInterval: pn.Backoff, Multiplier: 2, MaxInterval: MaxBackoff}
	d := b.NextBackOff()
	for i := 1; i < t.Attempt; i++ {
		d = b.NextBackOff()
	}
	d = min(d, MaxBackoff)
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%d/%d", r.runID, pn.ID, t.Visit, t.Attempt)
	jitter := time.Duration(uint64(d) / 5 * uint64(h.Sum32()%1000) / 1000)
	return min(d+jitter, MaxBackoff)
}

// fail applies on_error to a failure that will not be retried.
func (r *Run) fail(f *frame, pn *PlanNode, attempt int, partial map[string]any, err *node.Error, taskID int64) {
	st := &f.st[pn.Slot]
	st.status = StatusFailed
	out := withStatus(copyMap(partial), false, err.Message)
	f.out[pn.Slot] = out
	r.latest[pn.Index] = out
	r.step(f, pn, attempt, StatusFailed, out, err, taskID)
	r.event(EventNodeFinished, pn, f, map[string]any{"status": string(StatusFailed), "error": err.Message, "category": err.Category})
	if f.abort {
		return // the foreach item has stopped: its failures no longer count
	}
	onErr := pn.OnError
	if pn.ctrl == ctrlFail || err.Code == "max_visits" && st.visits > pn.MaxVisits+1 {
		// A fail node; a node arrived at again after the failure of its
		// visit limit went on (its on_error led back round): the cycle
		// does not end, and the run fails instead of going round again.
		onErr = "fail"
	}
	switch onErr {
	case "continue":
		if r.inForEach(f) {
			f.abort, f.abortErr = true, err
			return
		}
		r.propagate(f, pn, []string{""})
	case "route":
		r.propagate(f, pn, []string{"error"})
	default:
		if r.cancelling {
			return // the run ends cancelled, as asked
		}
		if !r.failing {
			// The first failure is the run's error.
			r.failErr = record.ErrorContext(pn.ID, &node.Error{Code: err.Code, Category: err.Category,
				Message: fmt.Sprintf("node %s: %s", pn.ID, err.Message), Details: err.Details})
		}
		r.failing = true
		if r.running > 0 {
			r.act.CancelRunning = true
		}
		r.dropTimers()
	}
}

func (r *Run) inForEach(f *frame) bool {
	return f.owner >= 0 && r.plan.Nodes[f.owner].ctrl == ctrlForEach
}

// dropTimers forgets every timer and every wait for a signal, as the run
// stops: a retry does not happen (the failed attempt stays failed), and a
// node holding its successors is cancelled. The frames involved are
// settled by the caller.
func (r *Run) dropTimers() {
	ids := make([]int64, 0, len(r.timers))
	for id := range r.timers {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	r.act.Stop = append(r.act.Stop, ids...)
	for _, id := range ids {
		tm := r.timers[id]
		delete(r.timers, id)
		f, pn := tm.frame, r.plan.Nodes[tm.node]
		f.active--
		st := &f.st[pn.Slot]
		st.timer = 0
		if tm.kind == timerDelay {
			// The wait did not end: its output (what it would have waited)
			// is not kept.
			st.status = StatusCancelled
			r.step(f, pn, tm.task.Attempt, StatusCancelled, nil, &node.Error{Code: "cancelled", Category: node.CategoryCancelled,
				Message: "stopped while waiting to go on"}, tm.task.ID)
			r.event(EventNodeFinished, pn, f, finished(StatusCancelled))
		}
	}
	ids = ids[:0]
	for id := range r.awaits {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		a := r.awaits[id]
		delete(r.awaits, id)
		f, pn := a.frame, r.plan.Nodes[a.node]
		f.active--
		f.st[pn.Slot].status = StatusCancelled
		r.step(f, pn, a.task.Attempt, StatusCancelled, nil, &node.Error{Code: "cancelled", Category: node.CategoryCancelled,
			Message: "stopped while waiting for a signal"}, a.task.ID)
		r.event(EventNodeFinished, pn, f, finished(StatusCancelled))
	}
}

func (r *Run) succeeded(f *frame, pn *PlanNode, t *Task, oc Outcome) {
	st := &f.st[pn.Slot]
	out := withStatus(mergeLegacy(pn.ID, copyMap(oc.Output)), true, "")
	if c, ok := r.readDirectives(f, pn, oc.Directives); ok {
		out["confidence"] = c
	}
	if patch, ok := oc.Directives["_state_patch"].(map[string]any); ok && len(patch) > 0 {
		nv := make(map[string]any, len(r.vars)+len(patch))
		for k, v := range r.vars {
			nv[k] = v
		}
		keys := make([]string, 0, len(patch))
		for k, v := range patch {
			nv[k] = v
			keys = append(keys, k)
		}
		sort.Strings(keys)
		r.vars = nv
		r.event(EventVariableSet, pn, f, map[string]any{"names": keys})
	}
	awaits := (pn.ctrl == ctrlWait || pn.Spec.Parks != nil) && oc.Directives[DirectiveAwait] == AwaitSignal
	if (r.cancelling || r.failing) && (delayOf(oc.Directives) > 0 || awaits) {
		// It asked to hold its successors, but the run is stopping: the
		// wait never happens, as when a cancel drops a running delay.
		st.status = StatusCancelled
		r.step(f, pn, t.Attempt, StatusCancelled, nil, &node.Error{Code: "cancelled", Category: node.CategoryCancelled,
			Message: "stopped before its wait began"}, t.ID)
		r.event(EventNodeFinished, pn, f, finished(StatusCancelled))
		return
	}
	if r.cancelling || r.failing {
		st.status = StatusSuccess
		f.out[pn.Slot] = out
		r.latest[pn.Index] = out
		r.step(f, pn, t.Attempt, StatusSuccess, out, nil, t.ID)
		r.event(EventNodeFinished, pn, f, finished(StatusSuccess))
		return
	}
	switch pn.ctrl {
	case ctrlLoop:
		r.loopDecided(f, pn, t, out, oc)
		return
	case ctrlForEach:
		r.forEachStarted(f, pn, t, out)
		return
	}
	handles := []string{""}
	if route, ok := routeOf(oc.Directives); ok {
		handles = []string{route}
		r.event(EventBranchEvaluated, pn, f, map[string]any{"handle": route})
		if !r.hasEdge(pn, route) {
			r.event(EventWarning, pn, f, map[string]any{"message": fmt.Sprintf("node %q chose route %q, but no edge leaves it by that handle", pn.ID, route)})
		}
	}
	if awaits {
		r.await(f, pn, t, out, oc.Directives)
		return
	}
	if d := delayOf(oc.Directives); d > 0 {
		st.status = StatusWaiting
		f.out[pn.Slot] = out
		r.latest[pn.Index] = out
		r.step(f, pn, t.Attempt, StatusWaiting, out, nil, t.ID)
		r.nextID++
		r.timers[r.nextID] = &timerRef{kind: timerDelay, frame: f, node: pn.Index, handles: handles, output: out, task: t}
		st.timer = r.nextID
		f.active++
		r.act.Timers = append(r.act.Timers, Timer{ID: r.nextID, Delay: d, Hold: true, Index: pn.Index, Visit: st.visit})
		return
	}
	r.complete(f, pn, t.Attempt, out, handles, t.ID)
}

// await makes a wait node's step wait for a signal, and for its timeout
// when it has one.
func (r *Run) await(f *frame, pn *PlanNode, t *Task, out map[string]any, directives map[string]any) {
	st := &f.st[pn.Slot]
	st.status = StatusWaiting
	r.step(f, pn, t.Attempt, StatusWaiting, out, nil, t.ID)
	a := &awaitRef{frame: f, node: pn.Index, task: t, out: out, name: pn.ID}
	data := map[string]any{}
	if pn.ctrl != ctrlWait {
		a.resume, a.name = directives[DirectiveResume], SignalName(pn.ID, directives)
		data["signal"] = a.name
	}
	r.awaits[t.ID] = a
	f.active++
	if d := pn.SignalTimeout; d > 0 {
		r.nextID++
		r.timers[r.nextID] = &timerRef{kind: timerTimeout, frame: f, node: pn.Index, task: t}
		st.timer, a.timer = r.nextID, r.nextID
		f.active++
		r.act.Timers = append(r.act.Timers, Timer{ID: r.nextID, Delay: d, Hold: true, Timeout: true, Index: pn.Index, Visit: st.visit})
		data["timeout_ms"] = d.Milliseconds()
	}
	r.act.Awaits = append(r.act.Awaits, Await{Node: pn.ID, Index: pn.Index, Visit: st.visit, Task: t.ID, Signal: a.name})
	r.event(EventSignalAwaited, pn, f, data)
}

// Signal delivers a signal to the step at visit that waits for a signal
// named name (Await.Signal; a wait node's is its id): a wait node succeeds
// with {data, signaled_at, timed_out: false} and follows its default
// handle; a parked kind (node.Spec.Parks) runs again with Task.Resume. It
// reports whether the step waited; a signal for a step that does not wait
// changes nothing.
func (r *Run) Signal(name string, visit int, data any, at time.Time) (*Actions, bool) {
	r.begin()
	var a *awaitRef
	for _, c := range r.awaits {
		if pn := r.plan.Nodes[c.node]; c.name == name && c.frame.st[pn.Slot].visit == visit {
			a = c
			break
		}
	}
	if a == nil {
		return r.end(), false
	}
	delete(r.awaits, a.task.ID)
	f, pn := a.frame, r.plan.Nodes[a.node]
	f.active--
	if a.timer != 0 {
		delete(r.timers, a.timer)
		r.act.Stop = append(r.act.Stop, a.timer)
		f.active--
		f.st[pn.Slot].timer = 0
	}
	if pn.ctrl != ctrlWait {
		r.event(EventSignalReceived, pn, f, map[string]any{"signal": a.name})
		r.resumeTask(f, pn, a.task.Attempt, &node.Resume{Output: a.out, State: a.resume, Signal: data})
		r.settle(f)
		r.settleStopping()
		return r.end(), true
	}
	out := copyMap(a.out)
	out["data"] = data
	out["signaled_at"] = at.UTC().Format(time.RFC3339Nano)
	out["timed_out"] = false
	r.event(EventSignalReceived, pn, f, nil)
	r.complete(f, pn, a.task.Attempt, out, []string{""}, a.task.ID)
	r.settle(f)
	r.settleStopping()
	return r.end(), true
}

// Awaiting returns the steps waiting for a signal, oldest first.
func (r *Run) Awaiting() []Await {
	out := make([]Await, 0, len(r.awaits))
	for _, a := range r.awaits {
		pn := r.plan.Nodes[a.node]
		out = append(out, Await{Node: pn.ID, Index: pn.Index, Visit: a.frame.st[pn.Slot].visit, Task: a.task.ID, Signal: a.name})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out
}

func (r *Run) hasEdge(pn *PlanNode, handle string) bool {
	for _, ei := range pn.out {
		if r.plan.G.Edges[ei].On == handle {
			return true
		}
	}
	return false
}

func (r *Run) complete(f *frame, pn *PlanNode, attempt int, out map[string]any, handles []string, taskID int64) {
	st := &f.st[pn.Slot]
	st.status = StatusSuccess
	f.out[pn.Slot] = out
	r.latest[pn.Index] = out
	if pn.ctrl != ctrlEndLoop && pn.topo >= f.lastTopo {
		f.last, f.lastTopo = out, pn.topo
	}
	r.step(f, pn, attempt, StatusSuccess, out, nil, taskID)
	r.event(EventNodeFinished, pn, f, finished(StatusSuccess))
	r.propagate(f, pn, handles)
}

func routeOf(d map[string]any) (string, bool) {
	v, ok := d["_route"]
	if !ok || v == nil {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case bool:
		if x {
			return "true", true
		}
		return "false", true
	}
	return fmt.Sprint(v), true
}

// delayOf reads _delay_seconds; a delay too long for a time.Duration is
// the longest one.
func delayOf(d map[string]any) time.Duration {
	var secs float64
	switch x := d["_delay_seconds"].(type) {
	case int:
		secs = float64(x)
	case int64:
		secs = float64(x)
	case float64:
		secs = x
	default:
		return 0
	}
	if !(secs > 0) { // NaN too
		return 0
	}
	if secs >= float64(math.MaxInt64)/float64(time.Second) {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(secs * float64(time.Second))
}

// loopDecided handles a loop node's evaluation: enter the body again or
// leave by done.
func (r *Run) loopDecided(f *frame, pn *PlanNode, t *Task, out map[string]any, oc Outcome) {
	st := &f.st[pn.Slot]
	ls := st.loop
	route, _ := routeOf(oc.Directives)
	if route == "" {
		route = "body"
	}
	if route == "body" && ls.passes >= pn.MaxIterations {
		r.event(EventWarning, pn, f, map[string]any{"message": fmt.Sprintf("loop %q stopped at max_iterations (%d) before its exit condition held", pn.ID, pn.MaxIterations)})
		route = "done"
	}
	if route == "done" {
		out["iterations"] = ls.passes
		out["iteration"] = ls.passes
		r.event(EventLoopExited, pn, f, map[string]any{"iterations": ls.passes})
		st.loop = nil
		r.complete(f, pn, t.Attempt, out, []string{"done"}, t.ID)
		return
	}
	st.status = StatusWaiting
	r.event(EventLoopIteration, pn, f, map[string]any{"iteration": ls.passes})
	r.spawn(f, pn, ls.passes, map[string]any{"iteration": ls.passes, "index": ls.passes})
}

// forEachStarted takes the items a foreach evaluated and starts the first
// frames.
func (r *Run) forEachStarted(f *frame, pn *PlanNode, t *Task, out map[string]any) {
	st := &f.st[pn.Slot]
	items, _ := out["items"].([]any)
	if raw, ok := out["items"]; ok && items == nil && raw != nil {
		r.fail(f, pn, t.Attempt, nil, &node.Error{Code: "foreach_items", Category: node.CategoryTemplate, Permanent: true,
			Message: fmt.Sprintf("foreach %q: items is a %T, not a list", pn.ID, raw)}, t.ID)
		return
	}
	st.loop = &loopState{items: items, results: make([]any, len(items))}
	if len(items) == 0 {
		r.forEachDone(f, pn, t.Attempt, t.ID)
		return
	}
	st.status = StatusWaiting
	st.task = t.ID
	r.forEachFill(f, pn)
}

func (r *Run) forEachFill(f *frame, pn *PlanNode) {
	ls := f.st[pn.Slot].loop
	for ls.inFlight < pn.Concurrency && ls.next < len(ls.items) && !r.cancelling && !r.failing {
		i := ls.next
		ls.next++
		ls.inFlight++
		r.event(EventLoopIteration, pn, f, map[string]any{"index": i, "total": len(ls.items)})
		r.spawn(f, pn, i, map[string]any{"item": ls.items[i], "index": i, "total": len(ls.items), "iteration": i})
	}
}

func (r *Run) forEachDone(f *frame, pn *PlanNode, attempt int, taskID int64) {
	ls := f.st[pn.Slot].loop
	results := ls.results
	norm := expr.Normalize(results)
	if len(results) > 0 && isFailedItem(results[0]) {
		// The first item failed: its error is not the foreach's.
		delete(norm, "error")
	}
	out := withStatus(norm, true, "")
	out["results"] = results
	out["failed"] = ls.failed
	r.event(EventLoopExited, pn, f, map[string]any{"iterations": len(results)})
	f.st[pn.Slot].loop = nil
	r.complete(f, pn, attempt, out, []string{"done"}, taskID)
}

// spawn starts a body frame of loop pn for pass.
func (r *Run) spawn(parent *frame, pn *PlanNode, pass int, loop map[string]any) {
	child := r.newFrame(parent, pn.Index, pn.region, len(pn.regionEdges), pass, loop)
	child.slotOf = pn.Slot
	parent.active++ // the child frame keeps its parent busy
	r.planFrame(child, nil)
	for _, i := range pn.region {
		m := r.plan.Nodes[i]
		if m.bodyIn > 0 && len(m.in) == 0 {
			r.activate(child, m, false)
		}
	}
	// Body starts that also have in-edges inside the body wait for them;
	// resolve counts the body handle as a fired input.
	r.settle(child)
}

// settle ends the cycles of f that are over, then closes frames that have
// nothing left to do, walking up.
func (r *Run) settle(f *frame) {
	for f != nil && !f.closed {
		r.release(f)
		if f.active > 0 {
			return
		}
		f.closed = true
		r.closeFrame(f)
		if f.parent == nil {
			r.finish()
			return
		}
		parent := f.parent
		parent.active--
		r.frameDone(parent, f)
		f = parent
	}
}

// closeFrame ends the steps of f that never ran: cancelled when the run
// was cancelled, else skipped (run_failed, item_failed, or dead_path for
// a node the frame planned but never reached).
func (r *Run) closeFrame(f *frame) {
	for _, i := range f.region {
		pn := r.plan.Nodes[i]
		st := &f.st[pn.Slot]
		if st.status != StatusPending || !r.reach[i] {
			continue
		}
		st.status = StatusSkipped
		if st.planned || r.cancelling || r.failing || f.abort {
			r.visit(f, pn)
			r.stopStep(f, pn, 0, 0)
		}
	}
	delete(r.frames, f.id)
}

// frameDone tells a loop that one of its body frames ended.
func (r *Run) frameDone(parent *frame, child *frame) {
	pn := r.plan.Nodes[child.owner]
	st := &parent.st[pn.Slot]
	if st.loop == nil {
		return
	}
	if r.failing || r.cancelling {
		// The loop ends with its last body frame.
		if pn.ctrl == ctrlForEach {
			st.loop.inFlight--
			if st.loop.inFlight > 0 {
				return
			}
		}
		st.loop = nil
		st.status = StatusCancelled
		r.step(parent, pn, 1, StatusCancelled, nil, nil, st.task)
		r.event(EventNodeFinished, pn, parent, finished(StatusCancelled))
		return
	}
	switch pn.ctrl {
	case ctrlLoop:
		st.loop.passes++
		r.startTask(parent, pn, 1)
	case ctrlForEach:
		ls := st.loop
		ls.inFlight--
		ls.done++
		if child.abort {
			ls.results[child.pass] = failedItem(child.abortErr)
			ls.failed++
		} else {
			ls.results[child.pass] = stripStatus(child.last)
		}
		if ls.done == len(ls.items) {
			r.forEachDone(parent, pn, 1, st.task)
			return
		}
		r.forEachFill(parent, pn)
	}
}

// TimerFired reports that a timer set earlier ran out.
func (r *Run) TimerFired(id int64) *Actions {
	r.begin()
	tm, ok := r.timers[id]
	if !ok {
		return r.end()
	}
	delete(r.timers, id)
	f := tm.frame
	f.active--
	pn := r.plan.Nodes[tm.node]
	f.st[pn.Slot].timer = 0
	switch tm.kind {
	case timerRetry:
		if !r.cancelling && !r.failing && !f.abort {
			r.event(EventNodeStarted, pn, f, map[string]any{"attempt": tm.task.Attempt + 1})
			r.startTask(f, pn, tm.task.Attempt+1)
		}
	case timerDelay:
		if !r.cancelling && !r.failing {
			r.complete(f, pn, tm.task.Attempt, tm.output, tm.handles, tm.task.ID)
		}
	case timerTimeout:
		// No signal came in time: the node follows its timeout handle.
		a := r.awaits[tm.task.ID]
		delete(r.awaits, tm.task.ID)
		f.active--
		out := copyMap(a.out)
		out["data"] = nil
		out["timed_out"] = true
		r.event(EventBranchEvaluated, pn, f, map[string]any{"handle": HandleTimeout})
		r.complete(f, pn, tm.task.Attempt, out, []string{HandleTimeout}, tm.task.ID)
	}
	r.settle(f)
	r.settleStopping()
	return r.end()
}

// Cancel stops the run: nothing new starts; running tasks finish (the
// driver may cancel them after a grace period); then the run ends cancelled.
func (r *Run) Cancel() *Actions {
	r.begin()
	if r.finished || r.cancelling {
		return r.end()
	}
	r.cancelling = true
	r.dropTimers()
	r.settleStopping()
	return r.end()
}

func (r *Run) sortedFrames() []*frame {
	fs := make([]*frame, 0, len(r.frames))
	for _, f := range r.frames {
		fs = append(fs, f)
	}
	sort.Slice(fs, func(i, j int) bool { return fs[i].id > fs[j].id })
	return fs
}

func (r *Run) finish() {
	if r.finished {
		return
	}
	r.finished = true
	a := r.act
	a.Done = true
	switch {
	case r.failing:
		a.Status, a.Err = RunFailed, r.failErr
	case r.cancelling:
		a.Status = RunCancelled
		a.Err = &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled"}
	default:
		a.Status = RunCompleted
	}
	r.event(EventExecutionFinished, nil, nil, map[string]any{"status": string(a.Status)})
}

// Task returns the task with id while it is out (released and not
// finished), else nil.
func (r *Run) Task(id int64) *Task {
	if ref, ok := r.tasks[id]; ok {
		return ref.task
	}
	return nil
}

// Running reports how many tasks are out: released to the driver and not
// finished.
func (r *Run) Running() int { return r.running }

// Ended reports whether the run has ended.
func (r *Run) Ended() bool { return r.finished }

// finishedData holds the data of a node_finished event that says no more
// than the step's status, one map for each status. A foreach of 10,000
// items finishes 20,000 steps: they share these instead of making a map
// each. Every reader of an event's data only reads it (a redactor that
// masks a value copies the map first), so a shared map is never written.
var finishedData = func() map[Status]map[string]any {
	m := map[Status]map[string]any{}
	for _, s := range []Status{StatusSuccess, StatusFailed, StatusCancelled, StatusSkipped} {
		m[s] = map[string]any{"status": string(s)}
	}
	return m
}()

// succeededEmpty is the output of a node that succeeded with nothing to
// say but that (an endloop, a trigger the run did not start from): one map,
// shared, as finishedData is, by every such step; what reads a step's
// output never writes it.
var succeededEmpty = map[string]any{"success": true}

// finished is the data of a node_finished event for a step that ended
// with status s, and nothing more to say.
func finished(s Status) map[string]any {
	if m, ok := finishedData[s]; ok {
		return m
	}
	return map[string]any{"status": string(s)}
}

func withStatus(m map[string]any, ok bool, errMsg string) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m["success"] = ok
	if errMsg != "" {
		m["error"] = errMsg
	}
	return m
}

// failedItem is what a foreach's list holds for an item that failed (with
// on_error: continue): {success: false, error: {code, category, message}}.
func failedItem(err *node.Error) map[string]any {
	e := map[string]any{}
	if err != nil {
		e = map[string]any{"code": err.Code, "category": string(err.Category), "message": err.Message}
	}
	return map[string]any{"success": false, "error": e}
}

func isFailedItem(v any) bool {
	m, ok := v.(map[string]any)
	return ok && m["success"] == false && len(m) == 2 && m["error"] != nil
}

// stripStatus returns m without the success and error fields the scheduler
// adds.
func stripStatus(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		if k != "success" && k != "error" {
			out[k] = v
		}
	}
	return out
}

func copyMap(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Stopping reports whether the run is ending early: it failed or was
// cancelled, and nothing new starts.
func (r *Run) Stopping() bool { return r.failing || r.cancelling }

// Status returns how the run ended, or is ending: failed with the error
// that failed it, cancelled, or completed.
func (r *Run) Status() (RunStatus, *node.Error) {
	switch {
	case r.failing:
		return RunFailed, r.failErr
	case r.cancelling:
		return RunCancelled, &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled"}
	default:
		return RunCompleted, nil
	}
}
