package runner_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// aiSetup is setup with a runner that reads no environment: models come
// from the workflows' llm: sections only.
func aiSetup(t *testing.T) *bundle {
	t.Helper()
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	return &bundle{ctx: t.Context(), r: r, dir: dir}
}

// spend is a reply that used n tokens.
func spend(n int) llmtest.Turn {
	return llmtest.Turn{Text: "ok", Usage: llm.Usage{InputTokens: n / 2, OutputTokens: n - n/2, TotalTokens: n}}
}

// llmChain is a workflow named name of count llm nodes in a row.
func llmChain(name, base, limits string, count int) string {
	var b strings.Builder
	b.WriteString("version: 1\nname: " + name + "\n" + limits + "llm:\n  default: {provider: openai, model: gpt-4.1-mini, base_url: \"" + base + "\", api_key: test}\nnodes:\n")
	for i := range count {
		b.WriteString("  - {id: ask" + string(rune('a'+i)) + ", type: llm, prompt: hello}\n")
	}
	b.WriteString("edges:\n")
	for i := 1; i < count; i++ {
		b.WriteString("  - {from: ask" + string(rune('a'+i-1)) + ", to: ask" + string(rune('a'+i)) + "}\n")
	}
	return b.String()
}

// A child workflow's own limits hold when it runs as a subworkflow, the
// parent's hold over what the child spends, and a spent budget fails the
// parent's step as a budget error, which repair leaves alone (the child's
// limits were ignored: limit 700, spent 2,100; the failure was sent to the
// repair model).
func TestSubworkflowBudgets(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, childLimits, parentLimits string
		wantTokens                      int
		wantMessage                     string
	}{
		{"the child's limits", "limits: {max_tokens: 700}\n", "", 700, "the run's token budget is spent"},
		{"the parent's limits", "", "limits: {max_tokens: 1000}\n", 1400, "the parent run's token budget is spent"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := aiSetup(t)
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{spend(700), spend(700), spend(700)})
			b.write(t, "child.yaml", llmChain("child", srv.BaseURL(), tc.childLimits, 3))
			w, err := b.r.Load(b.write(t, "parent.yaml", "version: 1\nname: parent\n"+tc.parentLimits+
				"nodes:\n  - {id: sub, type: subworkflow, workflow: child.yaml}\n"))
			require.NoError(t, err)
			res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
			require.NoError(t, err)
			require.Equal(t, "failed", string(res.Run.Status))
			require.Equal(t, tc.wantTokens, res.Run.Tokens, "the run's tokens")
			require.Equal(t, tc.wantTokens/700, srv.Calls(), "model calls")
			step := res.Engine.Steps[0]
			require.NotNil(t, step.Error)
			require.Equal(t, "budget_exceeded", step.Error.Category, step.Error.Message)
			require.Contains(t, step.Error.Message, tc.wantMessage)
			ok, why := repair.Repairable(step.Error)
			require.False(t, ok)
			require.Contains(t, why, "budget")
		})
	}
}

// A resumed run goes on from its recorded spend, and its record keeps the
// spend of every execution (resume reset the budget: limited to 1,000,
// spent 1,000 + 1,200, recorded 1,200).
func TestResumeKeepsTheSpend(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{spend(600), spend(600), spend(600)})
	gate := filepath.Join(b.dir, "open")
	w, err := b.r.Load(b.write(t, "spend.yaml", `version: 1
name: spend
limits: {max_tokens: 1000}
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: first, type: llm, prompt: one}
  - {id: gate, type: shell, command: [test, -f, "`+gate+`"]}
  - {id: second, type: llm, prompt: two}
  - {id: third, type: llm, prompt: three}
edges:
  - {from: first, to: gate}
  - {from: gate, to: second}
  - {from: second, to: third}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.Equal(t, 600, res.Run.Tokens)

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "failed", string(again.Run.Status))
	require.Equal(t, 1200, again.Run.Tokens, "both executions' spend")
	require.Equal(t, 2, srv.Calls(), "the third call is over the budget")
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, 1200, doc.Tokens, "the stored run")
	var third *runner.StepDoc
	for i := range doc.Steps {
		if doc.Steps[i].Node == "third" {
			third = &doc.Steps[i]
		}
	}
	require.NotNil(t, third)
	require.Equal(t, "failed", string(third.Status))
	require.Equal(t, "budget_exceeded", third.Error.Category)
}

// Every billed reply counts in the step's and the run's totals: both
// replies of a schema step whose re-ask failed too (the step and run
// showed 0), and the judge's calls on an expect: (outside the totals).
func TestEveryBilledReplyCounts(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "not json", Usage: llm.Usage{InputTokens: 100, OutputTokens: 20, TotalTokens: 120}},
		{Text: "still not json", Usage: llm.Usage{InputTokens: 150, OutputTokens: 30, TotalTokens: 180}},
		{Text: `{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "it is one"}]}`,
			Usage: llm.Usage{InputTokens: 900, OutputTokens: 100, TotalTokens: 1000}},
	})
	w, err := b.r.Load(b.write(t, "billed.yaml", `version: 1
name: billed
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: one, type: set, values: {x: 1}, expect: "x is one"}
  - id: extract
    type: llm
    prompt: "the city as JSON"
    schema: {type: object, required: [city]}
    on_error: continue
edges:
  - {from: one, to: extract}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.Equal(t, 3, srv.Calls())
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	var extract *runner.StepDoc
	for i := range doc.Steps {
		if doc.Steps[i].Node == "extract" {
			extract = &doc.Steps[i]
		}
	}
	require.NotNil(t, extract)
	require.Equal(t, "failed", string(extract.Status))
	require.Equal(t, 300, extract.Tokens, "both replies of the failed re-ask")
	require.InDelta(t, (250*0.40+50*1.60)/1e6, extract.CostUSD, 1e-12)
	require.NotNil(t, doc.Verdict)
	require.Equal(t, 1000, doc.Verdict.Tokens, "the judge's tokens, on the verdict")
	require.Equal(t, 1300, doc.Tokens, "the run's totals hold the step's and the judge's")
	require.InDelta(t, (250*0.40+50*1.60+900*0.40+100*1.60)/1e6, doc.CostUSD, 1e-12)

	// skein check judges again, and the run's totals count it.
	srv.Push(llmtest.Turn{Text: `{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "still one"}]}`,
		Usage: llm.Usage{InputTokens: 900, OutputTokens: 100, TotalTokens: 1000}})
	v, err := b.r.Check(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, 1000, v.Tokens)
	doc, err = b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, 2300, doc.Tokens)
}

// What the repair model costs counts in the run's totals (recorded as a
// repair_usage event) and against its budget: a run whose budget is spent
// is not repaired.
func TestRepairSpendsFromTheRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, limits string
		wantStatus   string
	}{
		{name: "counted", wantStatus: "completed"},
		{name: "budget spent", limits: "limits: {max_tokens: 100}\n", wantStatus: "failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := aiSetup(t)
			missing := filepath.Join(b.dir, "missing")
			src := `version: 1
name: fixme
` + tc.limits + `llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "BASE", api_key: test}
nodes:
  - {id: ask, type: llm, prompt: hello}
  - {id: gate, type: shell, command: [test, -f, "` + missing + `"]}
edges:
  - {from: ask, to: gate}
`
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{spend(100)})
			src = strings.ReplaceAll(src, "BASE", srv.BaseURL())
			fixed, err := json.Marshal(map[string]string{"explanation": "the file does not exist; test the folder",
				"workflow": strings.Replace(src, `-f, "`+missing, `-d, "`+b.dir, 1)})
			require.NoError(t, err)
			srv.Push(llmtest.Turn{Text: string(fixed), Usage: llm.Usage{InputTokens: 400, OutputTokens: 100, TotalTokens: 500}})
			file := b.write(t, "fixme.yaml", src)
			res, err := b.r.StartRepairing(b.ctx, runner.RepairRequest{File: file,
				Inputs: func(*workflow.Workflow) (map[string]any, error) { return nil, nil }})
			require.NoError(t, err)
			require.Equal(t, tc.wantStatus, string(res.Run.Status), res.Repair.Stopped)
			if tc.limits != "" {
				require.Equal(t, 1, srv.Calls(), "the repair model is not asked")
				require.Contains(t, res.Repair.Stopped, "token budget is spent")
				require.Equal(t, 100, res.Run.Tokens)
				return
			}
			require.Equal(t, 500, res.Repair.Tokens)
			require.Equal(t, 600, res.Run.Tokens, "the node's and the repair model's")
			doc, err := b.r.Get(b.ctx, res.Run.ID)
			require.NoError(t, err)
			require.Equal(t, 600, doc.Tokens)
			evs, _, err := b.r.Events(b.ctx, res.Run.ID, 0, 0)
			require.NoError(t, err)
			var usage []map[string]any
			for _, ev := range evs {
				if ev.Type == runner.EventRepairUsage {
					usage = append(usage, ev.Data)
				}
			}
			require.Len(t, usage, 1)
			require.EqualValues(t, 500, usage[0]["tokens"])
		})
	}
}

// A guardrail whose judge gave no valid answer after a re-ask was billed
// for both replies: its step counts them.
func TestGuardrailJudgeFailureCounts(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{spend(120), spend(180)})
	w, err := b.r.Load(b.write(t, "guard.yaml", `version: 1
name: guard
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: polite, type: guardrail, judge: "Is this polite?", value: "hello there"}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.Equal(t, 2, srv.Calls())
	require.Equal(t, 300, res.Engine.Steps[0].Tokens)
	require.Equal(t, 300, res.Run.Tokens)
}

// A resumed parent resumes its child run with the child's spend: the
// child's own limits go on from it, and the parent's totals count each
// token once.
func TestResumedChildKeepsItsSpend(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{spend(600), spend(600), spend(600)})
	gate := filepath.Join(b.dir, "open")
	b.write(t, "child.yaml", `version: 1
name: child
limits: {max_tokens: 1000}
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: first, type: llm, prompt: one}
  - {id: gate, type: shell, command: [test, -f, "`+gate+`"]}
  - {id: second, type: llm, prompt: two}
  - {id: third, type: llm, prompt: three}
edges:
  - {from: first, to: gate}
  - {from: gate, to: second}
  - {from: second, to: third}
`)
	w, err := b.r.Load(b.write(t, "parent.yaml", "version: 1\nname: parent\nnodes:\n  - {id: sub, type: subworkflow, workflow: child.yaml}\n"))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.Equal(t, 600, res.Run.Tokens)

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "failed", string(again.Run.Status))
	require.Equal(t, 2, srv.Calls(), "the child's third call is over its own budget")
	require.Equal(t, "budget_exceeded", again.Engine.Steps[len(again.Engine.Steps)-1].Error.Category)
	require.Equal(t, 1200, again.Run.Tokens, "each token once")
}

// What the repair model cost counts in the run's totals also when none of
// its answers could be run (no execution followed to count it).
func TestUnusedRepairsAreBilled(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, nil)
	for _, kind := range []string{"alpha", "beta", "gamma"} { // three answers that do not validate
		bad, err := json.Marshal(map[string]string{"explanation": "try this",
			"workflow": "version: 1\nname: stuck\nnodes:\n  - {id: gate, type: " + kind + "}\n"})
		require.NoError(t, err)
		srv.Push(llmtest.Turn{Text: string(bad), Usage: llm.Usage{InputTokens: 80, OutputTokens: 20, TotalTokens: 100}})
	}
	file := b.write(t, "stuck.yaml", `version: 1
name: stuck
llm:
  repair: {provider: openai, model: gpt-4.1-mini, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: gate, type: shell, command: [test, -f, "`+filepath.Join(b.dir, "missing")+`"]}
`)
	res, err := b.r.StartRepairing(b.ctx, runner.RepairRequest{File: file,
		Inputs: func(*workflow.Workflow) (map[string]any, error) { return nil, nil }})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status))
	require.Equal(t, 3, srv.Calls(), res.Repair.Stopped)
	require.Contains(t, res.Repair.Stopped, "attempts did not fix the workflow")
	require.Equal(t, 300, res.Repair.Tokens)
	require.Equal(t, 300, res.Run.Tokens)
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.Equal(t, 300, doc.Tokens)
	evs, _, err := b.r.Events(b.ctx, res.Run.ID, 0, 0)
	require.NoError(t, err)
	require.Equal(t, runner.EventRepairUsage, evs[len(evs)-1].Type)
}

// A guardrail whose judge model has no known price records a warning that
// says how to set one.
func TestGuardrailUnpricedJudgeWarns(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{{Text: `{"pass": true, "reason": "polite"}`,
		Usage: llm.Usage{InputTokens: 10, OutputTokens: 5, TotalTokens: 15}}})
	w, err := b.r.Load(b.write(t, "guard.yaml", `version: 1
name: guard
llm:
  default: {provider: openai, model: model-x, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: polite, type: guardrail, judge: "Is this polite?", value: "hello there"}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.Equal(t, "completed", string(res.Run.Status))
	evs, _, err := b.r.Events(b.ctx, res.Run.ID, 0, 0)
	require.NoError(t, err)
	var warned bool
	for _, ev := range evs {
		if ev.Type == "warning" && ev.Node == "polite" && ev.Data["unpriced"] == true {
			warned = true
			require.Contains(t, ev.Data["message"], "no known price")
			require.Contains(t, ev.Data["message"], "price: {input_per_mtok")
		}
	}
	require.True(t, warned)
	require.Equal(t, 15, res.Run.Tokens)
}

// notes is an Observer that keeps the repair loop's notes.
type notes struct {
	mu    sync.Mutex
	notes []runner.Note
}

func (n *notes) Started(*store.Run, bool) {}
func (n *notes) Step(engine.StepRecord)   {}
func (n *notes) Event(engine.TimedEvent)  {}
func (n *notes) Note(x runner.Note)       { n.mu.Lock(); n.notes = append(n.notes, x); n.mu.Unlock() }
func (n *notes) of(kind string) []runner.Note {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []runner.Note
	for _, x := range n.notes {
		if x.Kind == kind {
			out = append(out, x)
		}
	}
	return out
}

// A check judge and a repair model without a known price say so, and how
// to set one, as the nodes' models do (they counted as $0 silently).
func TestUnpricedJudgeAndRepairWarn(t *testing.T) {
	t.Parallel()
	b := aiSetup(t)
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: `{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "it is one"}]}`,
			Usage: llm.Usage{InputTokens: 90, OutputTokens: 10, TotalTokens: 100}},
	})
	w, err := b.r.Load(b.write(t, "judged.yaml", `version: 1
name: judged
llm:
  default: {provider: openai, model: model-x, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: one, type: set, values: {x: 1}, expect: "x is one"}
`))
	require.NoError(t, err)
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	require.NotNil(t, doc.Verdict)
	require.Equal(t, "PASSED", doc.Verdict.Status)
	require.Len(t, doc.Verdict.Warnings, 1)
	require.Contains(t, doc.Verdict.Warnings[0], "the judge's model model-x has no known price")
	require.Contains(t, doc.Verdict.Warnings[0], "price: {input_per_mtok")

	missing := filepath.Join(b.dir, "missing")
	src := `version: 1
name: fixme
llm:
  default: {provider: openai, model: model-x, base_url: "` + srv.BaseURL() + `", api_key: test}
nodes:
  - {id: gate, type: shell, command: [test, -f, "` + missing + `"]}
`
	fixed, err := json.Marshal(map[string]string{"explanation": "test the folder",
		"workflow": strings.Replace(src, `-f, "`+missing, `-d, "`+b.dir, 1)})
	require.NoError(t, err)
	srv.Push(llmtest.Turn{Text: string(fixed), Usage: llm.Usage{InputTokens: 400, OutputTokens: 100, TotalTokens: 500}})
	obs := &notes{}
	rep, err := b.r.StartRepairing(b.ctx, runner.RepairRequest{File: b.write(t, "fixme.yaml", src),
		Inputs: func(*workflow.Workflow) (map[string]any, error) { return nil, nil }, Options: runner.Options{Observer: obs}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(rep.Run.Status), rep.Repair.Stopped)
	warned := obs.of("warning")
	require.Len(t, warned, 1)
	require.Contains(t, warned[0].Text, "the repair model model-x has no known price, so its cost counts as $0")
}
