package engine_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// testReg is an isolated registry: the standard kinds, copied from
// node.Default, plus the test kinds act and block.
var testReg = newTestRegistry()

func newTestRegistry() *node.Registry {
	reg := node.NewRegistry()
	for _, s := range node.Default.Specs() {
		kind := s.Kind
		var ctor node.Constructor
		if _, ok := node.Default.New(kind); ok {
			ctor = func() node.Kind { k, _ := node.Default.New(kind); return k }
		}
		reg.MustRegister(*s, ctor)
	}
	reg.MustRegister(node.Spec{
		Kind: "act", Category: node.Action,
		Description: "Test action: outputs out, fails its first `fail` attempts, may route, patch vars and delay.",
		Params: []node.Param{
			{Name: "out", Type: node.Map, Description: "The output."},
			{Name: "fail", Type: node.Int, Description: "How many attempts fail before one succeeds (-1: all)."},
			{Name: "permanent", Type: node.Bool, Description: "Failures are permanent (not retried)."},
			{Name: "retry_after", Type: node.Duration, Description: "RetryAfter of a failure."},
			{Name: "route", Type: node.String, Description: "_route of the result."},
			{Name: "patch", Type: node.Map, Description: "_state_patch of the result."},
			{Name: "delay", Type: node.Number, Description: "_delay_seconds of the result."},
		},
		Routes: true,
	}, func() node.Kind { return actKind{} })
	reg.MustRegister(node.Spec{
		Kind: "block", Category: node.Action,
		Description: "Test action for the driver: waits until the test releases it or its context ends.",
		Params: []node.Param{
			{Name: "gate", Type: node.String, NoTemplate: true, Description: "The gate to wait at."},
		},
	}, func() node.Kind { return blockKind{} })
	reg.MustRegister(node.Spec{
		Kind: "written", Category: node.Action,
		Description: "Test action: outputs its value parameter as rendered and as written.",
		Params:      []node.Param{{Name: "value", Type: node.Any, Description: "Any value."}},
	}, func() node.Kind { return writtenKind{} })
	reg.MustRegister(node.Spec{
		Kind: "parker", Category: node.Action,
		Description: "Test action that parks (Spec.Parks): waits for a signal named first, then outputs what it resumed with.",
		Parks:       func(map[string]any) bool { return true },
	}, func() node.Kind { return parkerKind{} })
	reg.MustRegister(node.Spec{
		Kind: "noop", Category: node.Action,
		Description: "Test action that does nothing.",
	}, func() node.Kind { return noopKind{} })
	reg.MustRegister(node.Spec{
		Kind: "calc", Category: node.Data, Pure: true,
		Description: "Test kind declared pure: outputs its item, calls the test's calc hook, panics when asked.",
		Params: []node.Param{
			{Name: "item", Type: node.Any, Description: "What it outputs."},
			{Name: "panic", Type: node.Bool, Description: "Panic instead."},
		},
	}, func() node.Kind { return calcKind{} })
	return reg
}

// impureRegistry is reg with no kind declared pure: every task runs in a
// goroutine of its own, as before pure kinds ran on the driver's loop.
func impureRegistry(reg *node.Registry) *node.Registry {
	out := node.NewRegistry()
	for _, s := range reg.Specs() {
		kind := s.Kind
		var ctor node.Constructor
		if _, ok := reg.New(kind); ok {
			ctor = func() node.Kind { k, _ := reg.New(kind); return k }
		}
		spec := *s
		spec.Pure = false
		out.MustRegister(spec, ctor)
	}
	return out
}

// calcHook, when a test provides one, is called by every calc node.
var calcHook = node.NewService[func(c *node.Call)]("test calc hook")

// calcKind is the pure test kind.
type calcKind struct{}

func (calcKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	if hook, ok := calcHook.Lookup(c.Services); ok {
		hook(c)
	}
	if p, _ := c.Params["panic"].(bool); p {
		panic("calc was asked to panic")
	}
	return map[string]any{"item": c.Params["item"]}, nil
}

// parkerKind parks its step with the state {n: 1}; run again after the
// signal, it outputs the signal, the state and the output it parked with.
type parkerKind struct{}

func (parkerKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	if r := c.Resume; r != nil {
		return map[string]any{"signal": r.Signal, "state": r.State, "shown": r.Output["shown"]}, nil
	}
	return map[string]any{"shown": "asks", "_await": "signal", "_await_name": "first", "_resume": map[string]any{"n": 1}}, nil
}

// noopKind does nothing.
type noopKind struct{}

func (noopKind) Run(context.Context, *node.Call) (map[string]any, error) { return nil, nil }

// writtenKind outputs {rendered, written}: its value parameter from
// Call.Params and from Call.Written.
type writtenKind struct{}

func (writtenKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	return map[string]any{"rendered": c.Params["value"], "written": c.Written["value"]}, nil
}

// actKind is a scripted action.
type actKind struct{}

func (actKind) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	fails := -2
	switch v := c.Params["fail"].(type) {
	case int:
		fails = v
	case float64:
		fails = int(v)
	}
	if fails == -1 || (fails > 0 && c.Attempt <= fails) {
		e := node.Failf(node.CategoryExecution, "scripted", "%s attempt %d failed", c.NodeID, c.Attempt)
		e.Permanent, _ = c.Params["permanent"].(bool)
		if s, ok := c.Params["retry_after"].(string); ok {
			e.RetryAfter, _ = time.ParseDuration(s)
		}
		return nil, e
	}
	out := map[string]any{}
	if m, ok := c.Params["out"].(map[string]any); ok {
		for k, v := range m {
			out[k] = v
		}
	}
	if r, ok := c.Params["route"].(string); ok {
		out["_route"] = r
	}
	if p, ok := c.Params["patch"].(map[string]any); ok {
		out["_state_patch"] = p
	}
	if d, ok := c.Params["delay"]; ok {
		out["_delay_seconds"] = d
	}
	return out, nil
}

// gates lets a driver test hold block nodes until it releases them. Each test
// that uses block nodes gets its own gates through Options.Services; a block
// node waits at the gate its `gate` parameter names, else at its own id.
type gates struct {
	started chan string
	mu      sync.Mutex
	gate    map[string]chan struct{}
}

var gatesService = node.NewService[*gates]("test gates")

func newGates() *gates {
	return &gates{started: make(chan string, 64), gate: map[string]chan struct{}{}}
}

func (g *gates) get(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.gate[name]
	if !ok {
		ch = make(chan struct{})
		g.gate[name] = ch
	}
	return ch
}

// open lets the block nodes at gate name go on.
func (g *gates) open(name string) { close(g.get(name)) }

// blockKind reports that it started, then waits for its gate or for its
// context.
type blockKind struct{}

func (blockKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	g, _ := gatesService.Lookup(c.Services)
	if g == nil {
		return map[string]any{"blocked": false}, nil
	}
	name, _ := c.Params["gate"].(string)
	if name == "" {
		name = c.NodeID
	}
	gate := g.get(name)
	g.started <- c.NodeID
	select {
	case <-gate:
		return map[string]any{"blocked": true}, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// mustPlan decodes, validates and plans a workflow written in YAML.
func mustPlan(t testing.TB, src string) *engine.Plan {
	t.Helper()
	return mustPlanWith(t, testReg, src)
}

// mustPlanWith is mustPlan with the kinds of reg.
func mustPlanWith(t testing.TB, reg *node.Registry, src string) *engine.Plan {
	t.Helper()
	w, ds := workflow.Decode("test.yaml", []byte(src))
	require.NotNil(t, w, "decoding: %s", ds.Error())
	ds = append(ds, workflow.Validate(w, reg)...)
	require.False(t, ds.HasErrors(), "validating:\n%s\n%s", ds.Error(), src)
	p, err := engine.NewPlan(w, reg)
	require.NoError(t, err)
	return p
}

// stepKey names one step: a node's visit.
type stepKey struct {
	node  string
	visit int
}

// sim drives the pure scheduler by hand: no goroutines, no clock. Tasks wait
// in sim.tasks until the test finishes them; timers wait in sim.timers until
// it fires them.
type sim struct {
	t      testing.TB
	plan   *engine.Plan
	run    *engine.Run
	exec   func(*engine.Task) engine.Outcome
	tasks  []*engine.Task
	timers []engine.Timer
	// steps holds the latest update of each step, in the order steps first
	// appeared.
	steps  []*engine.StepUpdate
	index  map[stepKey]int
	events []engine.Event
	// starts counts the tasks handed out (attempts included).
	starts int
	done   *engine.Actions
	calls  int
	// recycle hands every Actions back to the run once applied (as the
	// local driver does); reused counts the calls that returned one.
	recycle bool
	spare   *engine.Actions
	reused  int
}

func newSim(t testing.TB, src string) *sim {
	t.Helper()
	return newSimPlan(t, mustPlan(t, src))
}

func newSimPlan(t testing.TB, p *engine.Plan) *sim {
	s := &sim{t: t, plan: p, run: engine.NewRun(p, "run-1"), index: map[stepKey]int{}}
	s.exec = s.realExec
	return s
}

// start starts the run from trigger ("" for the default starts).
func (s *sim) start(trigger string) *engine.Actions {
	s.t.Helper()
	starts, err := s.plan.StartNodes(trigger)
	require.NoError(s.t, err)
	return s.apply(s.run.Start(starts, map[string]any{"who": "test"}))
}

func (s *sim) apply(a *engine.Actions) *engine.Actions {
	s.t.Helper()
	s.calls++
	require.NotNil(s.t, a)
	if a == s.spare {
		s.reused++
	}
	if s.done != nil {
		require.Empty(s.t, a.Start, "tasks started after the run ended")
		require.False(s.t, a.Done, "the run ended twice")
	}
	for i := range a.Steps {
		su := a.Steps[i]
		k := stepKey{su.Node, su.Visit}
		if j, ok := s.index[k]; ok {
			prev := s.steps[j]
			require.False(s.t, prev.Status.Final() && su.Status == engine.StatusRunning && su.Attempt <= prev.Attempt,
				"step %s/%d went from %s back to running without a new attempt", su.Node, su.Visit, prev.Status)
			s.steps[j] = &su
			continue
		}
		s.index[k] = len(s.steps)
		s.steps = append(s.steps, &su)
	}
	s.events = append(s.events, a.Events...)
	s.timers = append(s.timers, a.Timers...)
	s.tasks = append(s.tasks, a.Start...)
	s.starts += len(a.Start)
	if a.Done {
		s.done = a
	} else if s.recycle {
		s.run.Recycle(a)
		s.spare = a
	}
	return a
}

// task returns the oldest running task of node id.
func (s *sim) task(id string) (*engine.Task, int) {
	s.t.Helper()
	for i, t := range s.tasks {
		if t.Node.ID == id {
			return t, i
		}
	}
	s.t.Fatalf("node %s is not running; running: %v", id, s.running())
	return nil, -1
}

// running returns the ids of the running tasks, in start order.
func (s *sim) running() []string {
	ids := make([]string, len(s.tasks))
	for i, t := range s.tasks {
		ids[i] = t.Node.ID
	}
	return ids
}

// finish runs the oldest task of node id with the executor and reports
// its outcome.
func (s *sim) finish(id string) *engine.Actions {
	s.t.Helper()
	t, _ := s.task(id)
	return s.finishWith(id, s.exec(t))
}

// finishWith reports the given outcome for the oldest task of node id.
func (s *sim) finishWith(id string, oc engine.Outcome) *engine.Actions {
	s.t.Helper()
	t, i := s.task(id)
	s.tasks = append(s.tasks[:i], s.tasks[i+1:]...)
	return s.apply(s.run.Finished(t.ID, oc))
}

// fire fires the oldest timer.
func (s *sim) fire() *engine.Actions {
	s.t.Helper()
	require.NotEmpty(s.t, s.timers, "no timer is set")
	tm := s.timers[0]
	s.timers = s.timers[1:]
	return s.apply(s.run.TimerFired(tm.ID))
}

// drain finishes tasks oldest first, firing timers when nothing runs, until
// the run ends.
func (s *sim) drain() {
	s.t.Helper()
	for guard := 0; s.done == nil; guard++ {
		require.Less(s.t, guard, 100_000, "the run did not end")
		switch {
		case len(s.tasks) > 0:
			s.finish(s.tasks[0].Node.ID)
		case len(s.timers) > 0:
			s.fire()
		default:
			s.t.Fatalf("the run hangs: nothing runs, no timer is set, and it has not ended\n%s", s.dump())
		}
	}
	require.Empty(s.t, s.tasks, "tasks still running after the run ended")
	require.Zero(s.t, s.run.Running())
	require.True(s.t, s.run.Ended())
	for _, st := range s.steps {
		require.True(s.t, st.Status.Final(), "step %s/%d ended %s\n%s", st.Node, st.Visit, st.Status, s.dump())
	}
}

// realExec runs a task with its real kind, as the local driver does.
func (s *sim) realExec(t *engine.Task) engine.Outcome {
	return execTask(t)
}

func execTask(t *engine.Task) engine.Outcome {
	scope := expr.Scope{
		Inputs: map[string]any{"who": "test"}, Trigger: map[string]any{},
		Vars: t.Vars, Loop: t.Loop, Nodes: t.Nodes,
		Execution: map[string]any{"id": "run-1"},
	}
	params, perr := engine.RenderParams(t.Node, &scope)
	if perr != nil {
		return engine.Outcome{Err: perr}
	}
	kind, ok := testReg.New(t.Node.Type)
	if !ok {
		return engine.Outcome{Err: &node.Error{Code: "no_runner", Category: node.CategoryInternal, Permanent: true, Message: "no runner for " + t.Node.Type}}
	}
	call := &node.Call{
		RunID: "run-1", NodeID: t.Node.ID, Visit: t.Visit, Attempt: t.Attempt, Params: params,
		Emit:   func(string, map[string]any) {},
		Redact: func(s string) string { return s },
		Eval:   func(code string) (any, error) { return expr.Eval(code, &scope) },
		Now:    func() time.Time { return time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC) },
		Passes: t.Passes,
	}
	out, err := kind.Run(context.Background(), call)
	if err != nil {
		return engine.Outcome{Err: node.AsError(err)}
	}
	clean, dirs := expr.SplitDirectives(out)
	return engine.Outcome{Output: clean, Directives: dirs}
}

// statuses returns the statuses of node id's steps, in visit order.
func (s *sim) statuses(id string) []engine.Status {
	var out []engine.Status
	for _, st := range s.sortedSteps(id) {
		out = append(out, st.Status)
	}
	return out
}

func (s *sim) sortedSteps(id string) []*engine.StepUpdate {
	var out []*engine.StepUpdate
	for _, st := range s.steps {
		if st.Node == id {
			out = append(out, st)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Visit < out[j].Visit })
	return out
}

// count returns how many steps of node id ended with status st.
func (s *sim) count(id string, st engine.Status) int {
	n := 0
	for _, x := range s.steps {
		if x.Node == id && x.Status == st {
			n++
		}
	}
	return n
}

// last returns the latest step of node id.
func (s *sim) last(id string) *engine.StepUpdate {
	s.t.Helper()
	steps := s.sortedSteps(id)
	require.NotEmpty(s.t, steps, "node %s has no step", id)
	return steps[len(steps)-1]
}

// eventsOf returns the events of type typ (of node id when id is not "").
func (s *sim) eventsOf(typ, id string) []engine.Event {
	var out []engine.Event
	for _, ev := range s.events {
		if ev.Type == typ && (id == "" || ev.Node == id) {
			out = append(out, ev)
		}
	}
	return out
}

// dump describes the run so far for failure messages.
func (s *sim) dump() string {
	var b strings.Builder
	for _, st := range s.steps {
		fmt.Fprintf(&b, "  step %s v%d it%d a%d %s", st.Node, st.Visit, st.Iteration, st.Attempt, st.Status)
		if st.Error != nil {
			fmt.Fprintf(&b, " (%s)", st.Error.Message)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "  running: %v, timers: %d\n", s.running(), len(s.timers))
	return b.String()
}

// ok is a successful outcome with output out.
func ok(out map[string]any) engine.Outcome { return engine.Outcome{Output: out} }
