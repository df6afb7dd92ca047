package check

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Verdict is the answer to one check, or the sum of a node's answers.
type Verdict string

// Verdicts.
const (
	Pass    Verdict = "pass"
	Warn    Verdict = "warn"
	Fail    Verdict = "fail"
	Error   Verdict = "error"   // the check could not be answered
	Skipped Verdict = "skipped" // the check was not evaluated
	// NotRun: the node failed, so its checks were not run; the node's
	// failure is what fails the run.
	NotRun Verdict = "not_run"
)

// Run statuses.
const (
	StatusPassed   = "PASSED"
	StatusWarnings = "PASSED WITH WARNINGS"
	StatusFailed   = "FAILED"
	// StatusIncomplete: the run did not complete (it failed, was cancelled
	// or waits), or a checked node failed, and no check failed; the checks
	// of the nodes that did not run are skipped, those of the nodes that
	// failed not run, so the run cannot be said to pass.
	StatusIncomplete = "INCOMPLETE"
)

// OnFail values: what a check's "fail" does to the run.
const (
	OnFailFail = "fail"
	OnFailWarn = "warn"
)

const (
	expectName    = "expect" // the check name and type of a node's expect
	expectType    = "expect"
	maxToolEvents = 20
	stoppedAt     = "evaluation stopped at node "
)

// CheckResult is the answer to one check of one node.
type CheckResult struct {
	Node      string         `json:"node"`
	Check     string         `json:"check"`
	Type      string         `json:"type"`
	Verdict   Verdict        `json:"verdict"`
	Reasoning string         `json:"reasoning"`
	OnFail    string         `json:"on_fail"`
	Evidence  map[string]any `json:"evidence,omitempty"`
}

// hard reports whether the result fails the run.
func (r CheckResult) hard() bool {
	return r.Verdict == Fail || (r.Verdict == Error && r.OnFail != OnFailWarn)
}

// NodeVerdict is the answer to every check of one node, judged on one
// visit (0 when the node never ran).
type NodeVerdict struct {
	Node    string        `json:"node"`
	Visit   int           `json:"visit"`
	Verdict Verdict       `json:"verdict"`
	Checks  []CheckResult `json:"checks"`
	// Tokens and CostUSD are what the judge's calls on the node cost.
	Tokens  int     `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
}

// RunVerdict is the answer to every check of a run.
type RunVerdict struct {
	// Status is PASSED, PASSED WITH WARNINGS, FAILED or INCOMPLETE; "" when the
	// workflow has no checks and no expect.
	Status string        `json:"status"`
	Nodes  []NodeVerdict `json:"nodes"`
	// Stopped is the node whose hard failure stopped the pass.
	Stopped string `json:"stopped,omitempty"`
	// Tokens and CostUSD are what the judge's calls cost, all nodes
	// together; the run's totals include them.
	Tokens  int     `json:"tokens,omitempty"`
	CostUSD float64 `json:"cost_usd,omitempty"`
	// Warnings are about the pass itself, not a check: a judge model with
	// no known price, whose cost counts as $0.
	Warnings []string `json:"warnings,omitempty"`
}

// Input is what Evaluate looks at.
type Input struct {
	Workflow *workflow.Workflow
	Result   *engine.Result
	// Run is the run's scope (engine.RunScope: its inputs, trigger,
	// secrets and execution), which expr checks read as the nodes'
	// templates did; nil: the execution of Result only.
	Run *expr.Scope
	// Events returns a node's events in order (maps with at least "type"
	// and, when known, "visit"); nil means none.
	Events func(node string) []map[string]any
	// Images returns the paths of a node's image evidence; nil means none.
	Images func(node string) []string
	// Files is the file-access policy the judge reads images through: the
	// run's folder and the workflow's files:. Nil lets it read none.
	Files *node.Files
	// Judge answers screen checks and expect; nil makes them "error".
	Judge Judge
	// Budget is the run's budget, with what the run spent: the judge is
	// not asked once it is spent (the checks it would answer are
	// "error"), and what it spends counts on top. Nil: no limit.
	Budget node.Budget
}

// Evaluate answers the checks and expect outcomes of a finished run. It
// never fails: a check that cannot be answered ends as "error" with the
// reason. ctx bounds the judge's calls.
func Evaluate(ctx context.Context, in Input) *RunVerdict {
	v := &RunVerdict{Nodes: []NodeVerdict{}}
	if in.Workflow == nil {
		return v
	}
	e := newEvaluator(in)
	order := e.order()
	if len(order) == 0 {
		return v
	}
	for _, t := range order {
		var nv NodeVerdict
		switch {
		case v.Stopped != "":
			nv = skipNode(t, stoppedAt+v.Stopped)
		case t.step == nil:
			nv = skipNode(t, "the node did not run")
		case t.step.Status == engine.StatusFailed:
			// Checks judge what a node that completed gave; a node that
			// failed gave nothing to judge, and its failure already
			// fails the run (or was let pass with on_error).
			nv = skipNode(t, lastVisitReason(t.step))
			for i := range nv.Checks {
				nv.Checks[i].Verdict = NotRun
			}
		case t.step.Status != engine.StatusSuccess:
			nv = skipNode(t, lastVisitReason(t.step))
		default:
			nv = e.node(ctx, t.node, t.step)
		}
		nv.Verdict = sum(nv.Checks)
		v.Tokens += nv.Tokens
		v.CostUSD += nv.CostUSD
		v.Nodes = append(v.Nodes, nv)
		if v.Stopped == "" && anyHard(nv.Checks) {
			v.Stopped = t.node.ID
		}
	}
	v.Warnings = e.spent.Warnings
	v.Status = status(v.Nodes)
	if in.Result != nil && in.Result.Status != "" && in.Result.Status != engine.RunCompleted && v.Status != StatusFailed {
		v.Status = StatusIncomplete
	}
	if v.Status != StatusFailed && anyVerdict(v.Nodes, NotRun) {
		v.Status = StatusIncomplete
	}
	return v
}

// checked is a checked node and the step it is judged on (nil: it never ran).
type checked struct {
	node  *workflow.Node
	step  *engine.StepRecord
	index int // of step in Result.Steps, or of node in the workflow
}

type evaluator struct {
	in      Input
	dir     string         // the workflow file's folder
	latest  map[string]any // node id → latest output, with success and error
	last    map[string]*engine.StepRecord
	lastIdx map[string]int
	exec    map[string]any
	spent   Usage // what the judge cost so far
}

func newEvaluator(in Input) *evaluator {
	e := &evaluator{
		in:      in,
		latest:  map[string]any{},
		last:    map[string]*engine.StepRecord{},
		lastIdx: map[string]int{},
	}
	if in.Workflow.File != "" {
		e.dir = filepath.Dir(in.Workflow.File)
	}
	if in.Result == nil {
		return e
	}
	e.exec = map[string]any{"id": in.Result.RunID, "workflow": in.Result.Workflow}
	if !in.Result.StartedAt.IsZero() {
		e.exec["started_at"] = in.Result.StartedAt.UTC().Format(time.RFC3339)
	}
	latestVisit := map[string]int{}
	for i, s := range in.Result.Steps {
		if s == nil {
			continue
		}
		if cur, ok := e.last[s.Node]; !ok || s.Visit >= cur.Visit {
			e.last[s.Node] = s
			e.lastIdx[s.Node] = i
		}
		if s.Status != engine.StatusSuccess && s.Status != engine.StatusFailed {
			continue
		}
		if v, ok := latestVisit[s.Node]; ok && s.Visit < v {
			continue
		}
		latestVisit[s.Node] = s.Visit
		e.latest[s.Node] = scoped(s)
	}
	return e
}

// order returns the checked nodes: those that ran in the order of their
// last visit, then those that did not in workflow order.
func (e *evaluator) order() []checked {
	var ran, not []checked
	for i, n := range e.in.Workflow.Nodes {
		if n == nil || (len(n.Checks) == 0 && strings.TrimSpace(n.Expect) == "") {
			continue
		}
		if s, ok := e.last[n.ID]; ok {
			ran = append(ran, checked{node: n, step: s, index: e.lastIdx[n.ID]})
		} else {
			not = append(not, checked{node: n, index: i})
		}
	}
	sort.SliceStable(ran, func(i, j int) bool {
		a, b := ran[i], ran[j]
		if a.step.StepOrder != b.step.StepOrder {
			return a.step.StepOrder < b.step.StepOrder
		}
		return a.index < b.index
	})
	return append(ran, not...)
}

// node evaluates every check of a node on the given successful step.
func (e *evaluator) node(ctx context.Context, n *workflow.Node, step *engine.StepRecord) NodeVerdict {
	nv := NodeVerdict{Node: n.ID, Visit: step.Visit, Checks: make([]CheckResult, 0, len(n.Checks)+1)}
	out := outputOf(step)
	scope := e.scope(n.ID, step)
	var ask []pending
	for _, c := range n.Checks {
		if c == nil {
			continue
		}
		r := CheckResult{Node: n.ID, Check: c.Name, Type: c.Type, OnFail: onFail(c.OnFail)}
		if r.Check == "" {
			r.Check = c.Type
		}
		if text, ok := screenText(c); ok {
			jc := JudgeCheck{Name: r.Check, Type: c.Type, Text: text}
			if c.Type == "template_found" && e.in.Judge != nil {
				// The judge is shown the template image itself.
				jc.Template, _ = c.Params["template"].(string)
				if _, err := e.in.Files.Read(jc.Template); err != nil || jc.Template == "" {
					r.Verdict, r.Reasoning = Error, templateProblem(jc.Template, err)
					nv.Checks = append(nv.Checks, r)
					continue
				}
			}
			ask = append(ask, pending{index: len(nv.Checks), check: jc})
		} else {
			r.Verdict, r.Reasoning, r.Evidence = e.deterministic(c, out, scope)
		}
		nv.Checks = append(nv.Checks, r)
	}
	if text := strings.TrimSpace(n.Expect); text != "" {
		ask = append(ask, pending{index: len(nv.Checks), check: JudgeCheck{Name: expectName, Type: expectType, Text: text}})
		nv.Checks = append(nv.Checks, CheckResult{Node: n.ID, Check: expectName, Type: expectType, OnFail: OnFailFail})
	}
	if len(ask) > 0 {
		before := e.spent
		e.judge(ctx, n.ID, step.Visit, out, ask, nv.Checks)
		nv.Tokens, nv.CostUSD = e.spent.Tokens-before.Tokens, e.spent.CostUSD-before.CostUSD
	}
	for i := range nv.Checks {
		if r := &nv.Checks[i]; r.Verdict == Fail && r.OnFail == OnFailWarn {
			r.Verdict = Warn
		}
	}
	return nv
}

// scope is what a node's expr checks read: every node's latest output,
// the node's own output of the judged step, and the run's inputs,
// trigger, secrets and execution (workflow.CheckRoots).
func (e *evaluator) scope(id string, step *engine.StepRecord) *expr.Scope {
	nodes := maps.Clone(e.latest)
	if nodes == nil {
		nodes = map[string]any{}
	}
	nodes[id] = scoped(step)
	scope := expr.Scope{Execution: e.exec}
	if e.in.Run != nil {
		scope = *e.in.Run
	}
	scope.Nodes = nodes
	return &scope
}

// scoped returns a step's output as the scope holds it: with success and,
// for a failure, error.
func scoped(s *engine.StepRecord) map[string]any {
	out := maps.Clone(s.Output)
	if out == nil {
		out = map[string]any{}
	}
	if _, ok := out["success"]; !ok {
		out["success"] = s.Status == engine.StatusSuccess
	}
	if _, ok := out["error"]; !ok && s.Status == engine.StatusFailed && s.Error != nil {
		out["error"] = s.Error.Message
	}
	return out
}

// outputOf returns a step's output as the node produced it: without the
// success field the scheduler adds.
func outputOf(s *engine.StepRecord) map[string]any {
	out := maps.Clone(s.Output)
	if out == nil {
		out = map[string]any{}
	}
	delete(out, "success")
	return out
}

func onFail(s string) string {
	if s == OnFailWarn {
		return OnFailWarn
	}
	return OnFailFail
}

// skipNode returns a node's verdict with every check skipped.
func skipNode(t checked, why string) NodeVerdict {
	n := t.node
	nv := NodeVerdict{Node: n.ID, Checks: make([]CheckResult, 0, len(n.Checks)+1)}
	if t.step != nil {
		nv.Visit = t.step.Visit
	}
	for _, c := range n.Checks {
		if c == nil {
			continue
		}
		name := c.Name
		if name == "" {
			name = c.Type
		}
		nv.Checks = append(nv.Checks, CheckResult{
			Node: n.ID, Check: name, Type: c.Type, Verdict: Skipped, Reasoning: why, OnFail: onFail(c.OnFail),
		})
	}
	if strings.TrimSpace(n.Expect) != "" {
		nv.Checks = append(nv.Checks, CheckResult{
			Node: n.ID, Check: expectName, Type: expectType, Verdict: Skipped, Reasoning: why, OnFail: OnFailFail,
		})
	}
	return nv
}

func lastVisitReason(s *engine.StepRecord) string {
	switch s.Status {
	case engine.StatusFailed:
		msg := ""
		if s.Error != nil && s.Error.Message != "" {
			msg = ": " + s.Error.Message
		}
		return fmt.Sprintf("the node's last visit (visit %d) failed%s", s.Visit, msg)
	case engine.StatusSkipped:
		return fmt.Sprintf("the node's last visit (visit %d) was skipped", s.Visit)
	case engine.StatusCancelled:
		return fmt.Sprintf("the node's last visit (visit %d) was cancelled", s.Visit)
	default:
		return fmt.Sprintf("the node's last visit (visit %d) did not finish (%s)", s.Visit, s.Status)
	}
}

// rank orders verdicts from best to worst, for a node's sum.
var rank = map[Verdict]int{Skipped: 0, NotRun: 0, Pass: 1, Warn: 2, Error: 3, Fail: 4}

// anyVerdict reports whether a check of nodes has verdict want.
func anyVerdict(nodes []NodeVerdict, want Verdict) bool {
	for _, nv := range nodes {
		for _, r := range nv.Checks {
			if r.Verdict == want {
				return true
			}
		}
	}
	return false
}

// sum is a node's verdict: its worst check's.
func sum(rs []CheckResult) Verdict {
	v := Skipped
	for _, r := range rs {
		if rank[r.Verdict] > rank[v] || r.Verdict == NotRun && v == Skipped {
			v = r.Verdict
		}
	}
	return v
}

func anyHard(rs []CheckResult) bool {
	for _, r := range rs {
		if r.hard() {
			return true
		}
	}
	return false
}

func status(nodes []NodeVerdict) string {
	st := StatusPassed
	for _, nv := range nodes {
		for _, r := range nv.Checks {
			switch {
			case r.hard():
				return StatusFailed
			case r.Verdict == Warn || r.Verdict == Error:
				st = StatusWarnings
			}
		}
	}
	return st
}

// templateProblem says why a template_found check's template cannot be
// shown to the judge.
func templateProblem(path string, err error) string {
	if path == "" {
		return "template_found needs template: the path of the template image"
	}
	msg := err.Error()
	var ne *node.Error
	if errors.As(err, &ne) {
		msg = ne.Message
	}
	return fmt.Sprintf("the template image %s cannot be read: %s (a template is read from a folder the workflow declares under files:, or the run's folder)", path, msg)
}
