package engine_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
)

// The property tests build random valid workflows — sequences, ifs,
// switches, fan-outs with merges (all and any), loops, foreaches and
// guardrail → fix cycles, nested — from bytes, together with a model of what
// a run of each must record. They run the pure scheduler, completing tasks
// and firing timers in orders also chosen by the bytes, and check:
//
//   - every run ends within a bounded number of steps, and then nothing
//     runs, no timer matters, and every step has a final status;
//   - no node has two visits in one frame unless it is on a cycle;
//   - retry delays follow the backoff rule;
//   - the steps (node, status, iteration, attempts) are those of the model:
//     every node the run reaches ends success, failed or skipped as it
//     should, and each join fires exactly once per activation;
//   - the steps and their outputs are the same whatever the completion
//     order (fuzz-chosen, oldest first, newest first);
//   - a cancel at a chosen step ends the run cancelled, with nothing new
//     started after it;
//   - a wait for a signal ends when its signal comes, or its timeout
//     passes, whichever comes first; a signal for a step that no longer
//     waits changes nothing.

// Act behaviours of generated nodes.
const (
	behaveOK = iota
	behaveDisabled
	behaveRetry    // fails failTimes times, then succeeds (retries suffice)
	behaveDelay    // holds its successors with _delay_seconds
	behaveContinue // fails for good, on_error: continue
	behaveHard     // fails for good, on_error: fail
	behaveRoute    // on_error: route; fails on some visits
)

// fnode is what the test knows of a generated node.
type fnode struct {
	kind      string
	behave    int
	failTimes int
	backoff   time.Duration
	cases     int // switch
	passAfter int // guardrail: passes from this visit (0-based) on
	onCycle   bool
	timeout   bool // wait: has a timeout
}

// gen builds a workflow from bytes, falling back to a generator seeded by
// the bytes when they run out.
type gen struct {
	data   []byte
	pos    int
	rng    uint64
	seed   uint32
	n      int
	budget int
	nodes  []string
	edges  []string
	meta   map[string]*fnode
	// hard allows nodes that fail the run.
	hard bool
}

func newGen(data []byte, budget int) *gen {
	h := fnv.New64a()
	h.Write(data)
	sum := h.Sum64()
	return &gen{data: data, rng: sum, seed: uint32(sum >> 32), budget: budget, meta: map[string]*fnode{}}
}

func (g *gen) next() int {
	if g.pos < len(g.data) {
		g.pos++
		return int(g.data[g.pos-1])
	}
	// splitmix64
	g.rng += 0x9e3779b97f4a7c15
	z := g.rng
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return int((z ^ (z >> 31)) & 0xff)
}

func (g *gen) intn(n int) int { return g.next() % n }

// decide is the scripted choice of a node in a frame: the same in the
// model and in every run, whatever the order.
func (g *gen) decide(id string, iteration, k int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%d/%s/%d/%d", g.seed, id, iteration, k)
	return int(h.Sum32() >> 1)
}

func (g *gen) id(kind string) (string, *fnode) {
	g.n++
	g.budget--
	id := fmt.Sprintf("n%d", g.n)
	fn := &fnode{kind: kind}
	g.meta[id] = fn
	return id, fn
}

func (g *gen) node(format string, args ...any) {
	g.nodes = append(g.nodes, "  - {"+fmt.Sprintf(format, args...)+"}\n")
}

// exit is where a block continues: a node and a handle.
type exit struct{ node, handle string }

func (g *gen) edge(from exit, to string) {
	on := ""
	if from.handle != "" {
		on = fmt.Sprintf(", on: %q", from.handle)
	}
	g.edges = append(g.edges, fmt.Sprintf("  - {from: %s, to: %s%s}\n", from.node, to, on))
}

func (g *gen) yaml() string {
	return wf(strings.Join(g.nodes, ""), strings.Join(g.edges, ""))
}

// model is what a run must record.
type model struct {
	steps    map[string]int // "node|status|iteration|attempts" → how many
	warnings int
	// fails: a node fails the run; what else ran then depends on the order.
	fails bool
	// inexact: a foreach item stopped (on_error: continue); what else in
	// the item ran depends on the order.
	inexact bool
	// racy: a signal races its timeout, so a wait's output (data or
	// timed_out) depends on the order; its steps do not.
	racy bool
}

func (m *model) rec(id string, st engine.Status, iteration, attempts int) {
	m.steps[fmt.Sprintf("%s|%s|%d|%d", id, st, iteration, attempts)]++
}

// mframe is the frame a model function runs in.
type mframe struct {
	it      int
	foreach bool
}

// modelFn records what a block does in frame fr when its entry fired
// (live) or died, and reports whether its exit fires.
type modelFn func(m *model, fr mframe, live bool) bool

// block makes a block of nodes with one entry and one exit.
func (g *gen) block(depth int) (string, exit, modelFn) {
	if g.budget <= 0 {
		return g.act()
	}
	switch c := g.intn(20); {
	case c < 6:
		if g.intn(6) == 0 {
			return g.await()
		}
		return g.act()
	case c < 9:
		return g.seq(depth)
	case c < 11:
		return g.ifBlock(depth)
	case c < 12:
		return g.switchBlock(depth)
	case c < 14:
		return g.par(depth)
	case c < 16 && depth < 3:
		return g.loop(depth)
	case c < 18 && depth < 3:
		return g.forEach(depth)
	case c < 20:
		return g.cycle()
	}
	return g.act()
}

func (g *gen) seq(depth int) (string, exit, modelFn) {
	e1, x1, f1 := g.block(depth)
	e2, x2, f2 := g.block(depth)
	g.edge(x1, e2)
	return e1, x2, func(m *model, fr mframe, live bool) bool {
		return f2(m, fr, f1(m, fr, live))
	}
}

// act makes an action node, or an action with on_error: route and its
// error handler, joined.
func (g *gen) act() (string, exit, modelFn) {
	id, fn := g.id("act")
	switch b := g.intn(20); {
	case b < 2:
		fn.behave = behaveDisabled
		g.node("id: %s, type: act, disabled: true", id)
	case b < 5:
		fn.behave = behaveRetry
		fn.failTimes = 1 + g.intn(2)
		fn.backoff = []time.Duration{time.Second, 30 * time.Second, 3 * time.Minute}[g.intn(3)]
		g.node("id: %s, type: act, retries: %d, retry_backoff: %s", id, fn.failTimes+g.intn(2), fn.backoff)
	case b < 7:
		fn.behave = behaveDelay
		g.node("id: %s, type: act", id)
	case b < 9:
		fn.behave = behaveContinue
		g.node("id: %s, type: act, on_error: continue", id)
	case b < 10 && g.hard:
		fn.behave = behaveHard
		g.node("id: %s, type: act", id)
	case b < 12 && g.budget > 2:
		fn.behave = behaveRoute
		g.node("id: %s, type: act, on_error: route", id)
		h, _ := g.id("act")
		g.node("id: %s, type: act", h)
		j, jf := g.join()
		g.edge(exit{id, ""}, j)
		g.edge(exit{id, "error"}, h)
		g.edge(exit{h, ""}, j)
		return id, exit{j, ""}, func(m *model, fr mframe, live bool) bool {
			switch {
			case !live:
				m.rec(id, skipped, fr.it, 0)
				m.rec(h, skipped, fr.it, 0)
			case g.decide(id, fr.it, 0)%2 == 0:
				m.rec(id, failedSt, fr.it, 1)
				m.rec(h, success, fr.it, 1)
			default:
				m.rec(id, success, fr.it, 1)
				m.rec(h, skipped, fr.it, 0)
			}
			return jf(m, fr, live)
		}
	default:
		g.node("id: %s, type: act", id)
	}
	return id, exit{id, ""}, func(m *model, fr mframe, live bool) bool {
		if !live {
			m.rec(id, skipped, fr.it, 0)
			return false
		}
		switch fn.behave {
		case behaveDisabled:
			m.rec(id, skipped, fr.it, 0)
		case behaveRetry:
			m.rec(id, success, fr.it, fn.failTimes+1)
		case behaveContinue:
			m.rec(id, failedSt, fr.it, 1)
			if fr.foreach {
				m.inexact = true
			}
		case behaveHard:
			m.rec(id, failedSt, fr.it, 1)
			m.fails = true
			return false
		default:
			m.rec(id, success, fr.it, 1)
		}
		return true
	}
}

// await makes a wait for a signal; with a timeout, both its handles lead
// to a join, so the run goes on alike whichever comes first.
func (g *gen) await() (string, exit, modelFn) {
	id, fn := g.id("wait")
	fn.timeout = g.intn(2) == 0
	if !fn.timeout {
		g.node("id: %s, type: wait, until: signal", id)
		return id, exit{id, ""}, func(m *model, fr mframe, live bool) bool {
			if !live {
				m.rec(id, skipped, fr.it, 0)
				return false
			}
			m.rec(id, success, fr.it, 1)
			return true
		}
	}
	g.node("id: %s, type: wait, until: signal, timeout: 1h", id)
	j, jf := g.join()
	g.edge(exit{id, ""}, j)
	g.edge(exit{id, "timeout"}, j)
	return id, exit{j, ""}, func(m *model, fr mframe, live bool) bool {
		if !live {
			m.rec(id, skipped, fr.it, 0)
		} else {
			m.rec(id, success, fr.it, 1)
			m.racy = true
		}
		return jf(m, fr, live)
	}
}

// join makes a node that joins branches: a merge (all or any, sometimes
// disabled) or an action with several inputs.
func (g *gen) join() (string, modelFn) {
	c := g.intn(8)
	kind := "merge"
	if c >= 6 {
		kind = "act"
	}
	id, _ := g.id(kind)
	disabled := c == 5
	switch {
	case kind == "act":
		g.node("id: %s, type: act", id)
	case c%2 == 0:
		g.node("id: %s, type: merge, wait: any, disabled: %t", id, disabled)
	default:
		g.node("id: %s, type: merge, disabled: %t", id, disabled)
	}
	return id, func(m *model, fr mframe, anyFired bool) bool {
		switch {
		case !anyFired:
			m.rec(id, skipped, fr.it, 0)
			return false
		case disabled:
			m.rec(id, skipped, fr.it, 0)
		default:
			m.rec(id, success, fr.it, 1)
		}
		return true
	}
}

// branch makes a block after handle h of node from, or nothing (an edge
// straight to the join); it returns how to model it and the exit.
func (g *gen) branch(depth int, from exit) (exit, modelFn) {
	if g.budget <= 0 || g.intn(4) == 0 {
		return from, func(_ *model, _ mframe, live bool) bool { return live }
	}
	e, x, f := g.block(depth)
	g.edge(from, e)
	return x, f
}

func (g *gen) ifBlock(depth int) (string, exit, modelFn) {
	id, _ := g.id("if")
	disabled := g.intn(8) == 0
	g.node("id: %s, type: if, condition: \"true\", disabled: %t", id, disabled)
	tx, tf := g.branch(depth, exit{id, "true"})
	fx, ff := g.branch(depth, exit{id, "false"})
	j, jf := g.join()
	g.edge(tx, j)
	g.edge(fx, j)
	return id, exit{j, ""}, func(m *model, fr mframe, live bool) bool {
		route := "false"
		switch {
		case !live:
			m.rec(id, skipped, fr.it, 0)
		case disabled:
			m.rec(id, skipped, fr.it, 0)
		default:
			m.rec(id, success, fr.it, 1)
			if g.decide(id, fr.it, 0)%2 == 0 {
				route = "true"
			}
		}
		t := tf(m, fr, live && route == "true")
		f := ff(m, fr, live && route == "false")
		return jf(m, fr, t || f)
	}
}

func (g *gen) switchBlock(depth int) (string, exit, modelFn) {
	id, fn := g.id("switch")
	fn.cases = 1 + g.intn(3)
	disabled := g.intn(8) == 0
	var cases []string
	for i := range fn.cases {
		cases = append(cases, fmt.Sprintf("{name: c%d, condition: \"true\"}", i))
	}
	g.node("id: %s, type: switch, cases: [%s], disabled: %t", id, strings.Join(cases, ", "), disabled)
	handles := make([]string, 0, fn.cases+1)
	for i := range fn.cases {
		handles = append(handles, fmt.Sprintf("c%d", i))
	}
	handles = append(handles, "default")
	xs := make([]exit, len(handles))
	fs := make([]modelFn, len(handles))
	for i, h := range handles {
		xs[i], fs[i] = g.branch(depth, exit{id, h})
	}
	j, jf := g.join()
	for _, x := range xs {
		g.edge(x, j)
	}
	return id, exit{j, ""}, func(m *model, fr mframe, live bool) bool {
		route := "default"
		switch {
		case !live, disabled:
			m.rec(id, skipped, fr.it, 0)
		default:
			m.rec(id, success, fr.it, 1)
			route = handles[g.decide(id, fr.it, 0)%len(handles)]
		}
		fired := false
		for i, h := range handles {
			if fs[i](m, fr, live && route == h) {
				fired = true
			}
		}
		return jf(m, fr, fired)
	}
}

// par fans out to two or three branches and joins them.
func (g *gen) par(depth int) (string, exit, modelFn) {
	fork, ff := g.id("act")
	disabled := g.intn(8) == 0
	if disabled {
		ff.behave = behaveDisabled
	}
	g.node("id: %s, type: act, disabled: %t", fork, disabled)
	n := 2 + g.intn(2)
	xs := make([]exit, n)
	fs := make([]modelFn, n)
	for i := range n {
		e, x, f := g.block(depth)
		g.edge(exit{fork, ""}, e)
		xs[i], fs[i] = x, f
	}
	j, jf := g.join()
	for _, x := range xs {
		g.edge(x, j)
	}
	return fork, exit{j, ""}, func(m *model, fr mframe, live bool) bool {
		switch {
		case !live, disabled:
			m.rec(fork, skipped, fr.it, 0)
		default:
			m.rec(fork, success, fr.it, 1)
		}
		fired := false
		for _, f := range fs {
			if f(m, fr, live) {
				fired = true
			}
		}
		return jf(m, fr, fired)
	}
}

// body makes a loop's or foreach's body ending in its endloop.
func (g *gen) body(depth int, owner string) (string, modelFn) {
	end, _ := g.id("endloop")
	g.node("id: %s, type: endloop, loop: %s", end, owner)
	if g.budget <= 0 || g.intn(6) == 0 {
		g.edge(exit{owner, "body"}, end)
		return end, func(m *model, fr mframe, _ bool) bool {
			m.rec(end, success, fr.it, 1)
			return true
		}
	}
	e, x, f := g.block(depth + 1)
	g.edge(exit{owner, "body"}, e)
	g.edge(x, end)
	return end, func(m *model, fr mframe, live bool) bool {
		if f(m, fr, live) {
			m.rec(end, success, fr.it, 1)
		} else {
			m.rec(end, skipped, fr.it, 0)
		}
		return true
	}
}

func (g *gen) loop(depth int) (string, exit, modelFn) {
	id, _ := g.id("loop")
	maxIt := 1 + g.intn(4)
	disabled := g.intn(10) == 0
	g.node("id: %s, type: loop, exit: \"false\", max_iterations: %d, disabled: %t", id, maxIt, disabled)
	_, bf := g.body(depth, id)
	return id, exit{id, "done"}, func(m *model, fr mframe, live bool) bool {
		if !live || disabled {
			m.rec(id, skipped, fr.it, 0)
			return live
		}
		exitAfter := 1 + g.decide(id, fr.it, 0)%4
		passes := min(exitAfter, maxIt)
		if exitAfter > maxIt {
			m.warnings++
		}
		for p := range passes {
			bf(m, mframe{it: p}, true)
		}
		m.rec(id, success, fr.it, 1)
		return true
	}
}

func (g *gen) forEach(depth int) (string, exit, modelFn) {
	id, _ := g.id("foreach")
	disabled := g.intn(10) == 0
	g.node("id: %s, type: foreach, items: \"{{ [] }}\", concurrency: %d, disabled: %t", id, 1+g.intn(3), disabled)
	_, bf := g.body(depth, id)
	return id, exit{id, "done"}, func(m *model, fr mframe, live bool) bool {
		if !live || disabled {
			m.rec(id, skipped, fr.it, 0)
			return live
		}
		for i := range g.decide(id, fr.it, 0) % 4 {
			bf(m, mframe{it: i, foreach: true}, true)
		}
		m.rec(id, success, fr.it, 1)
		return true
	}
}

// cycle makes a guardrail → fix → … → guardrail cycle that passes on a
// chosen visit, or reaches max_visits.
func (g *gen) cycle() (string, exit, modelFn) {
	id, gf := g.id("guardrail")
	gf.onCycle = true
	gf.passAfter = g.intn(4)
	maxVisits := 1 + g.intn(3)
	disabled := g.intn(10) == 0
	onErr := "continue"
	if g.hard && g.intn(2) == 0 {
		onErr = "fail"
	}
	g.node("id: %s, type: guardrail, condition: \"true\", max_visits: %d, on_error: %s, disabled: %t", id, maxVisits, onErr, disabled)
	nfix := 1 + g.intn(2)
	fixes := make([]string, nfix)
	fixOff := make([]bool, nfix)
	prev := exit{id, "fail"}
	for i := range fixes {
		f, ff := g.id("act")
		ff.onCycle = true
		fixOff[i] = g.intn(6) == 0
		if fixOff[i] {
			ff.behave = behaveDisabled
		}
		g.node("id: %s, type: act, max_visits: %d, disabled: %t", f, maxVisits, fixOff[i])
		g.edge(prev, f)
		fixes[i], prev = f, exit{f, ""}
	}
	g.edge(prev, id)
	skipFixes := func(m *model, fr mframe) {
		for _, f := range fixes {
			m.rec(f, skipped, fr.it, 0)
		}
	}
	return id, exit{id, "pass"}, func(m *model, fr mframe, live bool) bool {
		if !live || disabled {
			m.rec(id, skipped, fr.it, 0)
			skipFixes(m, fr)
			return live
		}
		for k := 0; ; k++ {
			if k >= maxVisits {
				m.rec(id, failedSt, fr.it, 1)
				if onErr == "fail" {
					m.fails = true
				} else if fr.foreach {
					m.inexact = true // on_error: continue stops the item
				}
				skipFixes(m, fr)
				return false
			}
			m.rec(id, success, fr.it, 1)
			if k >= gf.passAfter {
				skipFixes(m, fr)
				return true
			}
			for i, f := range fixes {
				if fixOff[i] {
					m.rec(f, skipped, fr.it, 0)
				} else {
					m.rec(f, success, fr.it, 1)
				}
			}
		}
	}
}

// scenario is a generated workflow and its model.
type scenario struct {
	g     *gen
	src   string
	plan  *engine.Plan
	model *model
}

func genScenario(t testing.TB, data []byte, budget int) *scenario {
	g := newGen(data, budget)
	g.hard = g.intn(5) == 0
	var fns []modelFn
	m := &model{steps: map[string]int{}}
	// top makes a block and a last node after it, so that every handle a
	// node may take has an edge.
	top := func() (string, modelFn) {
		e, x, f := g.block(0)
		end, _ := g.id("act")
		g.node("id: %s, type: act", end)
		g.edge(x, end)
		return e, func(m *model, fr mframe, live bool) bool {
			if f(m, fr, live) {
				m.rec(end, success, 0, 1)
			} else {
				m.rec(end, skipped, 0, 0)
			}
			return true
		}
	}
	switch mode := g.intn(4); mode {
	case 0, 1:
		g.node("id: start, type: trigger.manual")
		e, f := top()
		g.edge(exit{"start", ""}, e)
		fns = append(fns, f)
		m.rec("start", success, 0, 1)
		if mode == 1 {
			// Nodes no trigger reaches are ignored.
			g.node("id: orphan, type: act")
			g.node("id: orphan_child, type: act")
			g.edges = append(g.edges, "  - {from: orphan, to: orphan_child}\n")
			m.warnings += 2
		}
	default:
		// No trigger: every entry node starts.
		for range 1 + mode - 2 {
			_, f := top()
			fns = append(fns, f)
		}
	}
	for _, f := range fns {
		f(m, mframe{}, true)
	}
	src := g.yaml()
	return &scenario{g: g, src: src, plan: mustPlan(t, src), model: m}
}

// exact reports whether the model predicts the run step by step.
func (sc *scenario) exact() bool { return !sc.model.fails && !sc.model.inexact }

// frun is one run of a scenario in one completion order.
type frun struct {
	t    testing.TB
	sc   *scenario
	run  *engine.Run
	pick func(n int) int
	// pending holds the running tasks and the set timers, oldest first.
	pending []pendingItem
	live    map[int64]bool // running task ids
	k       map[visitKey]int
	kNext   map[frameNode]int
	visits  map[frameNode]map[int]bool
	steps   map[stepKey]*engine.StepUpdate
	warns   int
	done    *engine.Actions
	nsteps  int
	// cancelAt cancels the run before that step (0: never).
	cancelAt  int
	cancelled bool
}

type pendingItem struct {
	task  *engine.Task
	timer engine.Timer
	await *engine.Await // a signal to send
}

type frameNode struct {
	frame int
	node  string
}

type visitKey struct {
	frame int
	node  string
	visit int
}

const maxSchedulerSteps = 50_000

func (sc *scenario) run(t testing.TB, pick func(n int) int, cancelAt int) *frun {
	fr := &frun{
		t: t, sc: sc, run: engine.NewRun(sc.plan, "run-1"), pick: pick,
		live: map[int64]bool{}, k: map[visitKey]int{}, kNext: map[frameNode]int{},
		visits: map[frameNode]map[int]bool{}, steps: map[stepKey]*engine.StepUpdate{},
		cancelAt: cancelAt,
	}
	starts, err := sc.plan.StartNodes("")
	require.NoError(t, err)
	fr.apply(fr.run.Start(starts, nil), nil)
	for fr.done == nil {
		fr.nsteps++
		if fr.nsteps > maxSchedulerSteps {
			t.Fatalf("the run did not end within %d steps\n%s", maxSchedulerSteps, sc.src)
		}
		if fr.nsteps == fr.cancelAt {
			fr.cancelled = true
			fr.apply(fr.run.Cancel(), nil)
			continue
		}
		if len(fr.pending) == 0 {
			t.Fatalf("the run hangs: nothing runs, no timer is set, and it has not ended\n%s", sc.src)
		}
		i := fr.pick(len(fr.pending))
		it := fr.pending[i]
		fr.pending = append(fr.pending[:i], fr.pending[i+1:]...)
		if it.await != nil {
			a, ok := fr.run.Signal(it.await.Node, it.await.Visit, "approved", signalAt)
			if !ok {
				require.Equal(t, &engine.Actions{}, a, "a signal that found no wait changed something")
			}
			fr.apply(a, nil)
			continue
		}
		if it.task == nil {
			fr.apply(fr.run.TimerFired(it.timer.ID), nil)
			continue
		}
		delete(fr.live, it.task.ID)
		oc := fr.outcome(it.task)
		if fr.cancelled && fr.pick(2) == 0 {
			// The driver cancelled the task's context.
			oc = engine.Outcome{Err: &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "context canceled"}}
		}
		fr.apply(fr.run.Finished(it.task.ID, oc), &it)
	}
	fr.finalChecks()
	return fr
}

func (fr *frun) apply(a *engine.Actions, finished *pendingItem) {
	t := fr.t
	if fr.done != nil {
		require.Empty(t, a.Start, "tasks started after the run ended")
		require.False(t, a.Done, "the run ended twice")
	}
	if fr.cancelled {
		require.Empty(t, a.Start, "a task started after the cancel")
	}
	for i := range a.Steps {
		su := a.Steps[i]
		fr.steps[stepKey{su.Node, su.Visit}] = &su
	}
	for _, ev := range a.Events {
		if ev.Type == engine.EventWarning {
			fr.warns++
		}
	}
	for _, tk := range a.Start {
		require.False(t, fr.live[tk.ID], "task %d started twice", tk.ID)
		fr.live[tk.ID] = true
		fn := fr.sc.g.meta[tk.Node.ID]
		key := frameNode{tk.Frame, tk.Node.ID}
		if fr.visits[key] == nil {
			fr.visits[key] = map[int]bool{}
		}
		fr.visits[key][tk.Visit] = true
		require.True(t, len(fr.visits[key]) == 1 || fn.onCycle,
			"node %s, on no cycle, has %d visits in frame %d\n%s", tk.Node.ID, len(fr.visits[key]), tk.Frame, fr.sc.src)
		vk := visitKey{tk.Frame, tk.Node.ID, tk.Visit}
		if _, ok := fr.k[vk]; !ok {
			fr.k[vk] = fr.kNext[key]
			fr.kNext[key]++
		}
		fr.pending = append(fr.pending, pendingItem{task: tk})
	}
	for _, id := range a.Stop {
		found := false
		for i, it := range fr.pending {
			if it.task == nil && it.await == nil && it.timer.ID == id {
				fr.pending = append(fr.pending[:i], fr.pending[i+1:]...)
				found = true
				break
			}
		}
		require.True(t, found, "timer %d was stopped but is not set", id)
	}
	for i := range a.Awaits {
		require.False(t, fr.cancelled, "a wait began after the cancel")
		fr.pending = append(fr.pending, pendingItem{await: &a.Awaits[i]})
	}
	for _, tm := range a.Timers {
		require.Positive(t, tm.Delay)
		if finished != nil {
			fr.checkDelay(finished.task, tm.Delay)
		}
		fr.pending = append(fr.pending, pendingItem{timer: tm})
	}
	if a.Done {
		fr.done = a
	}
}

// checkDelay checks a timer set when task tk finished: a retry follows the
// backoff rule; a held node waits the 5 s it asked for.
func (fr *frun) checkDelay(tk *engine.Task, d time.Duration) {
	fn := fr.sc.g.meta[tk.Node.ID]
	switch fn.behave {
	case behaveRetry:
		base := fn.backoff
		for i := 1; i < tk.Attempt; i++ {
			base *= 2
		}
		base = min(base, engine.MaxBackoff)
		require.GreaterOrEqual(fr.t, d, base)
		require.LessOrEqual(fr.t, d, min(base+base/5, engine.MaxBackoff))
	case behaveDelay:
		require.Equal(fr.t, 5*time.Second, d)
	default:
		if fn.kind == "wait" && fn.timeout {
			require.Equal(fr.t, time.Hour, d)
			return
		}
		fr.t.Fatalf("node %s (%s) set a timer of %s", tk.Node.ID, fn.kind, d)
	}
}

// outcome plays the node's part in the run.
func (fr *frun) outcome(tk *engine.Task) engine.Outcome {
	g := fr.sc.g
	id, it := tk.Node.ID, tk.Iteration
	k := fr.k[visitKey{tk.Frame, id, tk.Visit}]
	fn := g.meta[id]
	out := map[string]any{"v": fmt.Sprintf("%s/%d/%d", id, it, k)}
	fail := func(permanent bool) engine.Outcome {
		return engine.Outcome{Err: &node.Error{Code: "scripted", Category: node.CategoryExecution,
			Message: fmt.Sprintf("%s attempt %d failed", id, tk.Attempt), Permanent: permanent}}
	}
	switch fn.kind {
	case "act":
		switch fn.behave {
		case behaveRetry:
			if tk.Attempt <= fn.failTimes {
				return fail(false)
			}
		case behaveDelay:
			return engine.Outcome{Output: out, Directives: map[string]any{"_delay_seconds": 5.0}}
		case behaveContinue, behaveHard:
			return fail(true)
		case behaveRoute:
			if g.decide(id, it, 0)%2 == 0 {
				return fail(true)
			}
		}
		return engine.Outcome{Output: out}
	case "if":
		route := g.decide(id, it, k)%2 == 0
		return engine.Outcome{Output: map[string]any{"result": route}, Directives: map[string]any{"_route": fmt.Sprint(route)}}
	case "switch":
		r := g.decide(id, it, k) % (fn.cases + 1)
		h := "default"
		if r < fn.cases {
			h = fmt.Sprintf("c%d", r)
		}
		return engine.Outcome{Output: map[string]any{"case": h}, Directives: map[string]any{"_route": h}}
	case "guardrail":
		pass := k >= fn.passAfter
		h := "fail"
		if pass {
			h = "pass"
		}
		return engine.Outcome{Output: map[string]any{"passed": pass}, Directives: map[string]any{"_route": h}}
	case "loop":
		exitAfter := 1 + g.decide(id, it, 0)%4
		h := "body"
		if tk.Passes > 0 && tk.Passes >= exitAfter {
			h = "done"
		}
		return engine.Outcome{Output: map[string]any{"iteration": tk.Passes}, Directives: map[string]any{"_route": h}}
	case "wait":
		return engine.Outcome{Output: map[string]any{}, Directives: map[string]any{engine.DirectiveAwait: engine.AwaitSignal}}
	case "foreach":
		n := g.decide(id, it, 0) % 4
		items := make([]any, n)
		for i := range items {
			items[i] = i
		}
		return engine.Outcome{Output: map[string]any{"items": items}}
	}
	fr.t.Fatalf("node %s of kind %s ran as a task", id, fn.kind)
	return engine.Outcome{}
}

func (fr *frun) finalChecks() {
	t := fr.t
	require.True(t, fr.run.Ended())
	require.Zero(t, fr.run.Running())
	require.Empty(t, fr.live, "tasks still running after the run ended")
	for _, it := range fr.pending {
		require.Nil(t, it.task)
		if it.await != nil {
			a, ok := fr.run.Signal(it.await.Node, it.await.Visit, "late", signalAt)
			require.False(t, ok, "a wait still waits after the run ended")
			require.Equal(t, &engine.Actions{}, a)
			continue
		}
		a := fr.run.TimerFired(it.timer.ID)
		require.Empty(t, a.Start, "a timer left over started a task")
		require.Empty(t, a.Steps)
	}
	for _, st := range fr.steps {
		require.True(t, st.Status.Final(), "step %s/%d ended %s\n%s", st.Node, st.Visit, st.Status, fr.sc.src)
	}
	switch {
	case fr.cancelled:
		require.Contains(t, []engine.RunStatus{engine.RunCancelled, engine.RunFailed}, fr.done.Status)
	case fr.sc.model.fails && fr.sc.model.inexact:
		// A failing node in a stopped foreach item may not get to run.
		require.Contains(t, []engine.RunStatus{engine.RunCompleted, engine.RunFailed}, fr.done.Status)
	case fr.sc.model.fails:
		require.Equal(t, engine.RunFailed, fr.done.Status)
	default:
		require.Equal(t, engine.RunCompleted, fr.done.Status, "%v\n%s", fr.done.Err, fr.sc.src)
	}
}

// summary is the run's steps as a multiset: node|status|iteration|attempts.
func (fr *frun) summary() map[string]int {
	out := map[string]int{}
	for _, st := range fr.steps {
		out[fmt.Sprintf("%s|%s|%d|%d", st.Node, st.Status, st.Iteration, st.Attempt)]++
	}
	return out
}

// outputs is the run's steps with their outputs, sorted.
func (fr *frun) outputs() []string {
	var out []string
	for _, st := range fr.steps {
		b, err := json.Marshal(st.Output)
		require.NoError(fr.t, err)
		out = append(out, fmt.Sprintf("%s|%s|%d|%d|%s", st.Node, st.Status, st.Iteration, st.Attempt, b))
	}
	sort.Strings(out)
	return out
}

// checkScheduler runs one scenario in several orders and checks the
// properties.
func checkScheduler(t testing.TB, data []byte, budget int) {
	sc := genScenario(t, data, budget)
	g := sc.g
	fuzzOrder := func(n int) int { return g.next() % n }
	cancelAt := 1 + g.intn(64)
	orders := []struct {
		name string
		pick func(n int) int
	}{
		{"fuzz", fuzzOrder},
		{"oldest first", func(int) int { return 0 }},
		{"newest first", func(n int) int { return n - 1 }},
	}
	var first *frun
	for _, o := range orders {
		fr := sc.run(t, o.pick, 0)
		if !sc.exact() {
			continue
		}
		require.Equal(t, sc.model.steps, fr.summary(), "order %s: the steps differ from the model\n%s", o.name, sc.src)
		require.Equal(t, sc.model.warnings, fr.warns, "order %s: warnings\n%s", o.name, sc.src)
		if first == nil {
			first = fr
			continue
		}
		if sc.model.racy {
			continue
		}
		require.Equal(t, first.outputs(), fr.outputs(), "order %s: the result depends on the completion order\n%s", o.name, sc.src)
	}
	sc.run(t, fuzzOrder, cancelAt)
}

// TestSchedulerProperties checks the properties on seeded random graphs, so
// that a plain go test covers them.
func TestSchedulerProperties(t *testing.T) {
	t.Parallel()
	n := 300
	if testing.Short() {
		n = 50
	}
	for seed := range n {
		data := binary.LittleEndian.AppendUint64(nil, uint64(seed)*0x9e3779b97f4a7c15)
		ok := t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkScheduler(t, data, 12+seed%30)
		})
		if !ok {
			break
		}
	}
}

// FuzzScheduler checks the properties on workflows built from the fuzzer's
// bytes.
func FuzzScheduler(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 7, 3, 9, 14, 1, 18, 2, 12, 5})
	f.Add([]byte{1, 15, 16, 18, 17, 19, 11, 13, 4, 8, 0, 0, 3})
	f.Add([]byte("loops and cycles and merges"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 512 {
			return
		}
		checkScheduler(t, data, 40)
	})
}
