package engine_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The resume plan's property: a random workflow of the scheduler's
// property tests (loops, foreaches, guardrail → fix cycles, branches,
// joins), sometimes with one action replaced by a subworkflow node whose
// child is a random workflow too, runs on the local driver with scripted
// kinds and one action failing, so the run fails — or cancelling the run
// as it runs, so the run is interrupted. A node's definition is
// then edited, or not. The plan of a resume (a dry run of it, turned into
// durable.Verdicts) must agree with what the resume then does, run by run
// (the child runs too):
//
//   - a node the plan says nothing depends on has exactly the steps the
//     plan lists, each reused, run or skipped as it says;
//   - a node the plan says depends on one that runs again has at least the
//     steps the plan lists (its later steps were not known).
//
// When the resume fails again (a node that always fails), the run's
// failure stops other branches, and a foreach item's failing node (with
// on_error: continue) its item's, wherever they are: a step of the resume
// is then only checked to be one the plan lists, or of a node it says
// depends, or one the dry run saw stopped by such a failure too.

// resumeScript plays the generated nodes' parts, the same in every
// execution of the run: what a node does depends on the node, its loop
// context and its visit, never on the order things finish in.
type resumeScript struct {
	seed string
	meta map[string]*fnode
	mu   sync.Mutex
	fail string // the node that fails while set
	// interrupt, when set, is called by the failing node instead: it
	// cancels the run, and the node stops, cancelled.
	interrupt context.CancelFunc
}

func (s *resumeScript) decide(id string, loop any, k int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "%s/%s/%v/%d", s.seed, id, loop, k)
	return int(h.Sum32() >> 1)
}

func (s *resumeScript) failing(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fail == id
}

func (s *resumeScript) setFailing(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = id
}

// scriptedKind is a generated node's kind in a resume scenario.
type scriptedKind struct {
	s    *resumeScript
	kind string
}

func (k scriptedKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	s, id := k.s, c.NodeID
	loop, _ := c.Eval("loop")
	fn := s.meta[id]
	fail := func(permanent bool) error {
		e := node.Failf(node.CategoryExecution, "scripted", "%s attempt %d failed", id, c.Attempt)
		e.Permanent = permanent
		return e
	}
	switch k.kind {
	case "act":
		if s.failing(id) {
			s.mu.Lock()
			interrupt := s.interrupt
			s.mu.Unlock()
			if interrupt != nil {
				interrupt()
				return nil, &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled"}
			}
			return nil, fail(true)
		}
		out := map[string]any{"v": fmt.Sprintf("%s/%v", id, loop)}
		if fn == nil {
			return out, nil
		}
		switch fn.behave {
		case behaveRetry:
			if c.Attempt <= fn.failTimes {
				return nil, fail(false)
			}
		case behaveDelay:
			out["_delay_seconds"] = 5.0
		case behaveContinue, behaveHard:
			return nil, fail(true)
		case behaveRoute:
			if s.decide(id, loop, 0)%2 == 0 {
				return nil, fail(true)
			}
		}
		return out, nil
	case "if":
		route := s.decide(id, loop, 0)%2 == 0
		return map[string]any{"result": route, "_route": fmt.Sprint(route)}, nil
	case "switch":
		h := "default"
		if r := s.decide(id, loop, 0) % (fn.cases + 1); r < fn.cases {
			h = fmt.Sprintf("c%d", r)
		}
		return map[string]any{"case": h, "_route": h}, nil
	case "guardrail":
		pass := s.decide(id, loop, c.Visit)%2 == 0
		h := "fail"
		if pass {
			h = "pass"
		}
		return map[string]any{"passed": pass, "_route": h}, nil
	case "loop":
		exitAfter := 1 + s.decide(id, loop, 0)%4
		h := "body"
		if c.Passes > 0 && c.Passes >= exitAfter {
			h = "done"
		}
		return map[string]any{"iteration": c.Passes, "_route": h}, nil
	case "foreach":
		items := make([]any, s.decide(id, loop, 0)%4)
		for i := range items {
			items[i] = i
		}
		return map[string]any{"items": items}, nil
	}
	return nil, fmt.Errorf("no script for kind %s", k.kind)
}

// scriptedRegistry is testReg with the generated kinds scripted by s.
func scriptedRegistry(s *resumeScript) *node.Registry {
	reg := node.NewRegistry()
	for _, spec := range testReg.Specs() {
		kind := spec.Kind
		switch kind {
		case "act", "if", "switch", "guardrail", "loop", "foreach":
			reg.MustRegister(*spec, func() node.Kind { return scriptedKind{s: s, kind: kind} })
		default:
			if _, ok := testReg.New(kind); ok {
				reg.MustRegister(*spec, func() node.Kind { k, _ := testReg.New(kind); return k })
			} else {
				reg.MustRegister(*spec, nil)
			}
		}
	}
	return reg
}

// resumeScenario is a generated parent workflow, maybe with a child, in
// files of a folder.
type resumeScenario struct {
	dir, src, child string
	script          *resumeScript
	reg             *node.Registry
	// plain are the actions that may fail or be edited, parent's first.
	plain []string
}

// afterNode finds the node a depends verdict's reason names.
var afterNode = regexp.MustCompile(`after (\S+), `)

var plainAct = regexp.MustCompile(`(?m)^  - \{id: (\w+), type: act\}$`)

func genResumeScenario(t *testing.T, seed int) (*resumeScenario, bool) {
	data := binary.LittleEndian.AppendUint64(nil, uint64(seed)*0x9e3779b97f4a7c15+7)
	sc := genScenario(t, data, 10+seed%25)
	g := sc.g
	rsc := &resumeScenario{dir: t.TempDir(), script: &resumeScript{seed: fmt.Sprint(seed), meta: map[string]*fnode{}}}
	for id, fn := range g.meta {
		if fn.kind == "wait" {
			return nil, false // a wait for a signal holds the run
		}
		rsc.script.meta[id] = fn
	}
	// Foreach items run one at a time, so a node's visits are numbered
	// alike in every execution; joins wait for all their inputs, so what
	// follows one hashes alike whichever input came first.
	oneByOne := strings.NewReplacer("concurrency: 2", "concurrency: 1", "concurrency: 3", "concurrency: 1", "wait: any", "wait: all")
	rsc.src = oneByOne.Replace(sc.src)
	if g.intn(3) == 0 {
		// A child workflow, its nodes named c1, c2…, in place of an action.
		cg := genScenario(t, append(data, 1), 6+seed%12)
		for _, fn := range cg.g.meta {
			if fn.kind == "wait" {
				return nil, false
			}
		}
		for id, fn := range cg.g.meta {
			rsc.script.meta["c"+strings.TrimPrefix(id, "n")] = fn
		}
		child := regexp.MustCompile(`\bn(\d+)\b`).ReplaceAllString(cg.src, "c$1")
		rsc.child = oneByOne.Replace(child)
		if m := plainAct.FindStringSubmatch(rsc.src); m != nil {
			rsc.src = strings.Replace(rsc.src, m[0], fmt.Sprintf("  - {id: %s, type: subworkflow, workflow: child.yaml}", m[1]), 1)
		}
		require.NoError(t, os.WriteFile(filepath.Join(rsc.dir, "child.yaml"), []byte(rsc.child), 0o644))
	}
	for _, src := range []string{rsc.src, rsc.child} {
		for _, m := range plainAct.FindAllStringSubmatch(src, -1) {
			rsc.plain = append(rsc.plain, m[1])
		}
	}
	if len(rsc.plain) == 0 {
		return nil, false
	}
	rsc.reg = scriptedRegistry(rsc.script)
	return rsc, true
}

// load writes the parent workflow and plans it.
func (rsc *resumeScenario) load(t *testing.T, src string) *engine.Plan {
	file := filepath.Join(rsc.dir, "flow.yaml")
	require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	w, ds := workflow.Load(file, rsc.reg)
	require.False(t, ds.HasErrors(), "%s\n%s", ds.Error(), src)
	plan, err := engine.NewPlan(w, rsc.reg)
	require.NoError(t, err)
	return plan
}

// execution is one execution of the run: its steps and its child runs'.
type execution struct {
	res      *engine.Result
	col      *durable.Collector
	mu       sync.Mutex
	children map[string]*durable.Collector
}

func (x *execution) history() map[string][]*store.Step {
	out := map[string][]*store.Step{"": x.col.Steps()}
	for id, c := range x.children {
		out[id] = c.Steps()
	}
	return out
}

// execute runs plan once, reusing what hist (by run: "" for the run, a
// child run's id) recorded, when it is not nil.
// With interrupt, the failing node cancels the run instead of failing.
func (rsc *resumeScenario) execute(t *testing.T, plan *engine.Plan, hist map[string][]*store.Step, interrupt bool) *execution {
	x := &execution{col: &durable.Collector{}, children: map[string]*durable.Collector{}}
	opts := engine.Options{RunID: "run-1", Instant: true}
	opts.Recorder = x.col
	if hist != nil {
		opts.Reuse = durable.ForResume(hist[""]).Reuse
	}
	opts.Child = func(_ *workflow.Workflow, id string, _ map[string]any) (*engine.ChildRun, error) {
		col := &durable.Collector{}
		x.mu.Lock()
		x.children[id] = col
		x.mu.Unlock()
		return &engine.ChildRun{Recorder: col, Reuse: durable.ForResume(hist[id]).Reuse}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if hist == nil && interrupt {
		rsc.script.mu.Lock()
		rsc.script.interrupt = cancel
		rsc.script.mu.Unlock()
		defer func() {
			rsc.script.mu.Lock()
			rsc.script.interrupt = nil
			rsc.script.mu.Unlock()
		}()
	}
	res, err := engine.NewDriver(rsc.reg, nil, 0).Execute(ctx, plan, opts)
	require.NoError(t, err)
	x.res = res
	return x
}

// planOf is the plan of a resume of the run whose executions recorded
// hist, with plan; old is the workflow it ran with.
func (rsc *resumeScenario) planOf(t *testing.T, plan *engine.Plan, old *workflow.Workflow, hist map[string][]*store.Step) []durable.Verdict {
	col := &durable.Collector{}
	children := &durable.PlanChildren{Registry: rsc.reg, History: func(_ context.Context, id string) ([]*store.Step, error) {
		return hist[id], nil
	}}
	opts := engine.Options{RunID: "run-1", DryRun: true}
	opts.Recorder, opts.Reuse, opts.Child = col, durable.ForResume(hist[""]).Reuse, children.Factory(context.Background())
	res, err := engine.NewDriver(rsc.reg, nil, 0).Execute(context.Background(), plan, opts)
	require.NoError(t, err)
	runs := append([]durable.DryRun{{RunID: "run-1", Plan: plan, Old: old, History: hist[""], Steps: col.Steps(), Open: res.Open}}, children.Runs()...)
	return durable.Verdicts(runs)
}

// stepsKey names a step for the comparison: node, loop context, action.
func stepsKey(n string, loop map[string]any, action string) string {
	return fmt.Sprintf("%s|%v|%s", n, loop, action)
}

func checkResumePlan(t *testing.T, seed int) {
	rsc, ok := genResumeScenario(t, seed)
	if !ok {
		t.Skip("a wait for a signal, or no plain action")
	}
	g := rand(seed)
	victim := rsc.plain[g%len(rsc.plain)]
	interrupt := g/5%3 == 0
	plan := rsc.load(t, rsc.src)
	rsc.script.setFailing(victim)
	first := rsc.execute(t, plan, nil, interrupt)
	hist := first.history()

	src := rsc.src
	edited := ""
	if g/7%2 == 0 {
		edited = rsc.plain[g/13%len(rsc.plain)]
		src = strings.Replace(src, fmt.Sprintf("{id: %s, type: act}", edited), fmt.Sprintf("{id: %s, type: act, out: {edited: true}}", edited), 1)
	}
	plan2 := rsc.load(t, src)
	rsc.script.setFailing("")
	verdicts := rsc.planOf(t, plan2, plan.W, hist)
	resumed := rsc.execute(t, plan2, hist, false)

	ctx := fmt.Sprintf("seed %d: %s failed first (interrupting the run: %t), %q edited\n%s\n--- child.yaml\n%s\nplan:\n%s", seed, victim, interrupt, edited, src, rsc.child, showVerdicts(verdicts))
	planned := map[string]map[string]int{} // run → key → how many
	depends := map[string]map[string]bool{}
	stopped := map[string]bool{}
	for _, v := range verdicts {
		if planned[v.Run] == nil {
			planned[v.Run], depends[v.Run] = map[string]int{}, map[string]bool{}
		}
		if v.Action == durable.ActDepends {
			depends[v.Run][v.Node] = true
			continue
		}
		planned[v.Run][stepsKey(v.Node, v.Loop, v.Action)]++
		if v.Action == durable.ActSkip && v.Reason != "dead path" && v.Reason != "disabled" {
			// Stopped by a failure: which steps a failure stops depends
			// on the order, in the dry run too.
			stopped[stepsKey(v.Node, v.Loop, v.Run)] = true
		}
	}
	// A run that failed stops its other branches, and a foreach item a
	// node stopped (on_error: continue) its other nodes, at whatever
	// point they are: the steps after it depend on the order. Then only
	// the steps the resume did are checked against the plan.
	completed := resumed.res.Status == engine.RunCompleted
	for _, steps := range resumed.history() {
		for _, st := range steps {
			completed = completed && st.SkipReason != engine.SkipItemFailed
		}
	}
	// A node that fails for good and lets the run go on (on_error:
	// continue or route) fails the same way when it runs again, and what
	// comes after it is then reused: the plan cannot know that it fails
	// again, and says that what follows depends on it.
	failsOn := false
	for _, v := range verdicts {
		if fn := rsc.script.meta[v.Node]; v.Action == durable.ActRun && fn != nil && (fn.behave == behaveContinue || fn.behave == behaveRoute) {
			failsOn = true
		}
	}
	plans := map[string]*engine.Plan{"": plan2}
	for run, steps := range resumed.history() {
		if run != "" && planned[run] == nil {
			// A child run the dry run did not reach: its subworkflow node
			// comes after one that runs again.
			rest, found := strings.TrimPrefix(run, "run-1."), false
			for _, pn := range plan2.Nodes {
				v := strings.TrimPrefix(rest, pn.ID)
				found = found || len(v) < len(rest) && v != "" && strings.Trim(v, "0123456789") == "" && depends[""][pn.ID]
			}
			require.True(t, found, "run %q ran, but the plan neither lists it nor says its node depends\n%s", run, ctx)
			continue
		}
		p := plans[run]
		if p == nil {
			w, ds := workflow.Load(filepath.Join(rsc.dir, "child.yaml"), rsc.reg)
			require.False(t, ds.HasErrors())
			var err error
			p, err = engine.NewPlan(w, rsc.reg)
			require.NoError(t, err)
		}
		byID := map[string]*engine.PlanNode{}
		for _, pn := range p.Nodes {
			byID[pn.ID] = pn
		}
		// The nodes whose hashes take in those of the nodes that run
		// again: what follows these along forward edges. (What follows a
		// loop is hashed after the loop node, not after its body.)
		chained := map[int]bool{}
		var walk func(i int)
		walk = func(i int) {
			for _, ei := range p.G.Out[i] {
				if e := p.G.Edges[ei]; !e.Back && !chained[e.To] {
					chained[e.To] = true
					walk(e.To)
				}
			}
		}
		for _, v := range verdicts {
			if m := afterNode.FindStringSubmatch(v.Reason); v.Run == run && v.Action == durable.ActDepends && m != nil && byID[m[1]] != nil {
				walk(byID[m[1]].Index)
			}
		}
		got := map[string]int{}
		nodeOf := map[string]string{}
		for _, s := range steps {
			act, _ := durable.Action(byID[s.Node], s)
			k := stepsKey(s.Node, s.Loop, act)
			if !completed && stopped[stepsKey(s.Node, s.Loop, run)] {
				continue
			}
			got[k]++
			nodeOf[k] = s.Node
		}
		want := planned[run]
		for k := range want {
			nodeOf[k] = strings.SplitN(k, "|", 2)[0]
		}
		for k := range nodeOf {
			node := nodeOf[k]
			w, gk := want[k], got[k]
			switch {
			case completed && depends[run][node]:
				require.GreaterOrEqual(t, gk, w, "run %q: step %s: the plan lists %d, the resume did %d\n%s", run, k, w, gk, ctx)
				if !failsOn && chained[byID[node].Index] && strings.HasSuffix(k, "|"+durable.ActReuse) {
					// What the plan could not know was not known before
					// either: the nodes' results are the same in every
					// execution, so nothing hashed after a node that runs
					// again was recorded with the same inputs.
					require.Equal(t, w, gk, "run %q: step %s: the plan lists %d reused, the resume reused %d\n%s", run, k, w, gk, ctx)
				}
			case completed:
				require.Equal(t, w, gk, "run %q: step %s: the plan lists %d, the resume did %d\n%s", run, k, w, gk, ctx)
			case !depends[run][node] && !strings.HasSuffix(k, "|"+durable.ActSkip):
				require.LessOrEqual(t, gk, w, "run %q: step %s: the plan lists %d, the failed resume did %d\n%s", run, k, w, gk, ctx)
			}
		}
	}
}

func showVerdicts(vs []durable.Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %-8s %s %s v%d %v: %s\n", v.Action, v.Run, v.Node, v.Visit, v.Loop, v.Reason)
	}
	return b.String()
}

// rand is a number drawn from the seed.
func rand(seed int) int {
	h := fnv.New32a()
	fmt.Fprintf(h, "resume/%d", seed)
	return int(h.Sum32() >> 1)
}

// TestResumePlanProperties checks the resume plan's property on seeded
// random workflows.
func TestResumePlanProperties(t *testing.T) {
	t.Parallel()
	n := 150
	if testing.Short() {
		n = 40
	}
	for seed := range n {
		if !t.Run(fmt.Sprint(seed), func(t *testing.T) { checkResumePlan(t, seed) }) {
			break
		}
	}
}

// FuzzResumePlan checks the resume plan's property on the workflows of
// the seeds the fuzzer picks.
func FuzzResumePlan(f *testing.F) {
	f.Add(uint16(0))
	f.Add(uint16(52))
	f.Add(uint16(1234))
	f.Fuzz(func(t *testing.T, seed uint16) {
		checkResumePlan(t, int(seed))
	})
}
