package check

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Judge answers the checks that need a model: screen checks and expect.
// Evaluate calls it once per node (twice when the first reply is not
// usable).
type Judge interface {
	Judge(ctx context.Context, req JudgeRequest) ([]JudgeVerdict, error)
}

// MeteredJudge is a Judge that says what each call cost; Evaluate counts
// it on the node's verdict and the run's, and against Input.Budget.
type MeteredJudge interface {
	Judge
	// JudgeMetered is Judge, with what the call cost (also when it
	// failed after the model answered: those replies were billed).
	JudgeMetered(ctx context.Context, req JudgeRequest) ([]JudgeVerdict, Usage, error)
}

// Usage is what calls of a model cost.
type Usage struct {
	Tokens  int     `json:"tokens"`
	CostUSD float64 `json:"cost_usd"`
	// Warnings say what the cost leaves out: a model with no known price
	// counts as $0.
	Warnings []string `json:"warnings,omitempty"`
}

// JudgeRequest is the evidence of one node and the checks to answer on it.
type JudgeRequest struct {
	Node   string
	Output map[string]any
	// ToolEvents are the node's last tool_call and tool_result events of
	// the judged visit, at most 20, oldest first.
	ToolEvents []map[string]any
	// Images are paths of the node's image evidence.
	Images []string
	// Files is the policy the judge reads Images through (Input.Files).
	Files  *node.Files
	Checks []JudgeCheck
}

// JudgeCheck is one thing for the judge to verify. Names are unique within
// a request.
type JudgeCheck struct {
	Name string
	Type string // a screen check type, or "expect"
	Text string // what to verify, in words
	// Template is, for template_found, the path of the template image,
	// read through JudgeRequest.Files and shown to the judge beside the
	// evidence.
	Template string
}

// JudgeVerdict is the judge's answer to one check: Verdict is "pass" or
// "fail".
type JudgeVerdict struct {
	CheckName string `json:"check_name"`
	Verdict   string `json:"verdict"`
	Reasoning string `json:"reasoning"`
}

// judgeAttempts is how many times a node's checks are asked about.
const judgeAttempts = 2

// NeedsJudge reports whether c is answered by the judge model (a screen
// check) rather than evaluated without one.
func NeedsJudge(c *workflow.Check) bool {
	_, ok := screenText(c)
	return ok
}

// screenText returns what a screen check asks the judge to verify.
func screenText(c *workflow.Check) (string, bool) {
	param := func(k string) string {
		v, ok := c.Params[k]
		if !ok {
			return `""`
		}
		if s, ok := v.(string); ok {
			return strconv.Quote(s)
		}
		return jsonText(v)
	}
	switch c.Type {
	case "text_present":
		return fmt.Sprintf("text %s is present on screen", param("text")), true
	case "text_absent":
		return fmt.Sprintf("text %s is absent from the screen", param("text")), true
	case "template_found":
		return "the template image attached for this check is found on screen", true
	case "window_title":
		return fmt.Sprintf("the window title is %s", param("title")), true
	}
	return "", false
}

// pending is a check waiting for the judge: the index of its result.
type pending struct {
	index int
	check JudgeCheck
}

// judgePreview is how much of a big value the judge is shown: what its
// prompt keeps of an output.
const judgePreview = 16 << 10

// judge asks the judge about a node's pending checks and fills their
// results.
func (e *evaluator) judge(ctx context.Context, node string, visit int, out map[string]any, ask []pending, results []CheckResult) {
	// Names must be unique for the answers to find their checks.
	byName := make(map[string]int, len(ask))
	checks := make([]JudgeCheck, len(ask))
	for i, p := range ask {
		name := p.check.Name
		for n := 2; ; n++ {
			if _, taken := byName[name]; !taken {
				break
			}
			name = fmt.Sprintf("%s (%d)", p.check.Name, n)
		}
		byName[name] = p.index
		checks[i] = p.check
		checks[i].Name = name
	}
	// The judge sees the start of a big value, not its reference.
	req := JudgeRequest{Node: node, Output: blob.Preview(out, judgePreview).(map[string]any), Files: e.in.Files}
	if e.in.Events != nil {
		req.ToolEvents = toolEvents(e.in.Events(node), visit)
	}
	if e.in.Images != nil {
		req.Images = slices.Clone(e.in.Images(node))
	}
	evidence := func() map[string]any {
		ev := map[string]any{"tool_events": len(req.ToolEvents)}
		if len(req.Images) > 0 {
			ev["images"] = slices.Clone(req.Images)
		}
		return ev
	}
	if e.in.Judge == nil {
		for _, c := range checks {
			r := &results[byName[c.Name]]
			r.Verdict, r.Reasoning = Error, "no judge model configured"
		}
		return
	}
	answers := map[string]JudgeVerdict{}
	issues := map[string]string{} // check name → what was wrong last
	todo := slices.Clone(checks)
	for attempt := 1; attempt <= judgeAttempts && len(todo) > 0; attempt++ {
		if ctx.Err() != nil {
			for _, c := range todo {
				issues[c.Name] = fmt.Sprintf("the evaluation was cancelled: %v", context.Cause(ctx))
			}
			break
		}
		if e.in.Budget != nil {
			if err := e.in.Budget.CheckExtra(e.spent.Tokens, e.spent.CostUSD); err != nil {
				for _, c := range todo {
					issues[c.Name] = "the judge was not asked: " + err.Error()
				}
				break
			}
		}
		req.Checks = slices.Clone(todo)
		reply, err := e.ask(ctx, req)
		if err != nil {
			for _, c := range todo {
				issues[c.Name] = fmt.Sprintf("the judge failed: %v", err)
			}
			continue
		}
		got, why := validReply(todo, reply)
		for _, c := range todo {
			if v, ok := got[c.Name]; ok {
				answers[c.Name] = v
			} else {
				issues[c.Name] = why[c.Name]
			}
		}
		todo = slices.DeleteFunc(todo, func(c JudgeCheck) bool { _, ok := answers[c.Name]; return ok })
	}
	for _, c := range checks {
		r := &results[byName[c.Name]]
		r.Evidence = evidence()
		a, ok := answers[c.Name]
		if !ok {
			r.Verdict = Error
			r.Reasoning = fmt.Sprintf("the judge gave no usable verdict in %d attempts: %s", judgeAttempts, issues[c.Name])
			continue
		}
		r.Verdict = Verdict(a.Verdict)
		r.Reasoning = strings.TrimSpace(a.Reasoning)
		if r.Reasoning == "" {
			r.Reasoning = "the judge gave no reasoning"
		}
	}
}

// ask asks the judge, counting what it cost.
func (e *evaluator) ask(ctx context.Context, req JudgeRequest) ([]JudgeVerdict, error) {
	m, ok := e.in.Judge.(MeteredJudge)
	if !ok {
		return e.in.Judge.Judge(ctx, req)
	}
	reply, u, err := m.JudgeMetered(ctx, req)
	e.spent.Tokens += u.Tokens
	e.spent.CostUSD += u.CostUSD
	for _, w := range u.Warnings {
		if !slices.Contains(e.spent.Warnings, w) {
			e.spent.Warnings = append(e.spent.Warnings, w)
		}
	}
	return reply, err
}

// validReply returns the usable verdicts of a reply, by check name, and
// for every asked check without one, what was wrong.
func validReply(asked []JudgeCheck, reply []JudgeVerdict) (map[string]JudgeVerdict, map[string]string) {
	want := make(map[string]bool, len(asked))
	for _, c := range asked {
		want[c.Name] = true
	}
	got := map[string]JudgeVerdict{}
	why := map[string]string{}
	var strays []string
	for _, v := range reply {
		name := v.CheckName
		if !want[name] {
			strays = append(strays, strconv.Quote(name))
			continue
		}
		if _, bad := why[name]; bad {
			continue
		}
		v.Verdict = strings.ToLower(strings.TrimSpace(v.Verdict))
		if v.Verdict != string(Pass) && v.Verdict != string(Fail) {
			why[name] = fmt.Sprintf("its verdict %q is not pass or fail", v.Verdict)
			delete(got, name)
			continue
		}
		if prev, dup := got[name]; dup && prev.Verdict != v.Verdict {
			why[name] = "the reply both passes and fails it"
			delete(got, name)
			continue
		}
		got[name] = v
	}
	for _, c := range asked {
		if _, ok := got[c.Name]; ok {
			continue
		}
		if _, ok := why[c.Name]; !ok {
			why[c.Name] = "the reply has no verdict for it"
		}
		if len(strays) > 0 {
			why[c.Name] += " (the reply names checks not asked about: " + strings.Join(strays, ", ") + ")"
		}
	}
	return got, why
}

// toolEvents returns the last tool_call and tool_result events of a visit.
// Events that do not say their visit are kept.
func toolEvents(evs []map[string]any, visit int) []map[string]any {
	var out []map[string]any
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		if t, _ := ev["type"].(string); t != "tool_call" && t != "tool_result" {
			continue
		}
		if v, ok := integer(ev["visit"]); ok && v != 0 && visit != 0 && v != visit {
			continue
		}
		out = append(out, ev)
	}
	if len(out) > maxToolEvents {
		out = out[len(out)-maxToolEvents:]
	}
	return slices.Clip(out)
}
