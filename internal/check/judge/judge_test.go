package judge_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

// TestJudgeThroughModel judges `expect:` and a screen check with the
// scripted model: the request carries the node's output, its last 20 tool
// events and its screenshot; a looping node is judged once, on its last
// visit; a malformed reply is retried once and then ends as error.
func TestJudgeThroughModel(t *testing.T) {
	t.Parallel()
	w, ds := workflow.Decode("judge.yaml", []byte(`version: 1
name: judge
llm:
  judge: {provider: openai, model: gpt-4.1-mini, base_url: "BASE", api_key: test}
nodes:
  - id: page
    type: set
    values: {title: "Welcome, Ada"}
    expect: "a greeting that names the user"
    checks:
      - {name: banner, type: text_present, text: Welcome}
  - id: other
    type: set
    values: {x: 1}
    expect: "x is one"
edges:
  - {from: page, to: other}
`))
	require.Empty(t, ds.Errors())
	require.Empty(t, workflow.Validate(w, node.Default).Errors())

	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.Reply(`{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "it greets Ada"},
			{"check_name": "banner", "verdict": "pass", "reasoning": "Welcome is shown"}]}`),
		llmtest.Reply(`not json at all`),
		llmtest.Reply(`still not json`),
		llmtest.Reply(`nope`),
		llmtest.Reply(`nope again`),
	})
	w.LLMConfig("judge").BaseURL = srv.BaseURL()

	dir := t.TempDir()
	shot := filepath.Join(dir, "evidence-1.png")
	require.NoError(t, os.WriteFile(shot, []byte("\x89PNG\r\n\x1a\nfake"), 0o644))
	var events []map[string]any
	for i := 1; i <= 25; i++ {
		events = append(events, map[string]any{"type": "tool_call", "visit": 2, "tool": fmt.Sprintf("t%d", i)})
	}
	now := time.Now()
	step := func(order int, id string, visit int, out map[string]any) *engine.StepRecord {
		return &engine.StepRecord{StepOrder: order, Node: id, Status: engine.StatusSuccess, Visit: visit, Output: out, StartedAt: &now, FinishedAt: &now}
	}
	res := &engine.Result{Status: engine.RunCompleted, Steps: []*engine.StepRecord{
		step(1, "page", 1, map[string]any{"title": "old title"}),
		step(2, "page", 2, map[string]any{"title": "Welcome, Ada"}),
		step(3, "other", 1, map[string]any{"x": 1}),
	}}
	v := check.Evaluate(context.Background(), check.Input{
		Workflow: w, Result: res, Judge: &judge.LLM{Models: registry.New(w, noEnv)},
		Events: func(n string) []map[string]any {
			if n == "page" {
				return events
			}
			return nil
		},
		Images: func(n string) []string {
			if n == "page" {
				return []string{shot}
			}
			return nil
		},
		Files: node.NewFiles(dir, dir), // the run's folder
	})

	reqs := srv.Requests()
	first := reqs[0].Messages[len(reqs[0].Messages)-1]
	require.Contains(t, first.Content, "Welcome, Ada", "judged on the last visit's output")
	require.NotContains(t, first.Content, "old title")
	require.Contains(t, first.Content, `"t25"`, "the last tool events are sent")
	require.Contains(t, first.Content, `"t6"`)
	require.NotContains(t, first.Content, `"t5"`, "only the last 20 tool events are sent")
	require.Len(t, first.Images, 1, "the screenshot is sent")
	require.True(t, strings.Contains(first.Content, "Welcome") && strings.Contains(first.Content, "names the user"))

	require.Equal(t, check.StatusFailed, v.Status)
	byNode := map[string]check.NodeVerdict{}
	for _, n := range v.Nodes {
		byNode[n.Node] = n
	}
	require.Equal(t, 2, byNode["page"].Visit)
	require.Equal(t, check.Pass, byNode["page"].Verdict)
	require.Equal(t, check.Error, byNode["other"].Checks[0].Verdict, "a malformed judge reply never passes")
	require.GreaterOrEqual(t, srv.Calls(), 3)
}

// A template_found check shows the judge the template image itself, after
// the screenshot (it was sent the template's path, never the image); what
// the judge's calls cost is on the node's verdict and the run's, at the
// judge model's price; once the run's budget is spent the judge is not
// asked.
func TestJudgeTemplateAndSpend(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		budget node.Budget
	}{
		{name: "within the budget"},
		{name: "budget spent", budget: engine.NewBudget(1000, 0, nil, 1000, 0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Decode("judge.yaml", []byte(`version: 1
name: judge
llm:
  judge: {provider: openai, model: gpt-4.1-mini, base_url: "BASE", api_key: test}
nodes:
  - id: page
    type: set
    values: {title: "Welcome"}
    checks:
      - {name: logo, type: template_found, template: logo.png}
`))
			require.Empty(t, ds.Errors())
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{{
				Text:  `{"verdicts": [{"check_name": "logo", "verdict": "pass", "reasoning": "top left"}]}`,
				Usage: llm.Usage{InputTokens: 1000, OutputTokens: 100, TotalTokens: 1100},
			}})
			w.LLMConfig("judge").BaseURL = srv.BaseURL()
			dir := t.TempDir()
			shot, logo := []byte("\x89PNG\r\n\x1a\nscreen"), []byte("\x89PNG\r\n\x1a\nlogo")
			require.NoError(t, os.WriteFile(filepath.Join(dir, "shot.png"), shot, 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "logo.png"), logo, 0o644))
			now := time.Now()
			res := &engine.Result{Status: engine.RunCompleted, Steps: []*engine.StepRecord{{StepOrder: 1, Node: "page", Status: engine.StatusSuccess,
				Visit: 1, Output: map[string]any{"title": "Welcome"}, StartedAt: &now, FinishedAt: &now}}}
			v := check.Evaluate(context.Background(), check.Input{
				Workflow: w, Result: res, Budget: tc.budget,
				Judge:  &judge.LLM{Models: registry.New(w, noEnv)},
				Images: func(string) []string { return []string{filepath.Join(dir, "shot.png")} },
				Files:  node.NewFiles(dir, dir),
			})
			r := v.Nodes[0].Checks[0]
			if tc.budget != nil {
				require.Zero(t, srv.Calls(), "no judge call past the budget")
				require.Equal(t, check.Error, r.Verdict)
				require.Contains(t, r.Reasoning, "budget is spent")
				require.Zero(t, v.Tokens)
				return
			}
			require.Equal(t, check.Pass, r.Verdict, r.Reasoning)
			msg := srv.Last().Messages[len(srv.Last().Messages)-1]
			require.Len(t, msg.Images, 2)
			require.Equal(t, shot, msg.Images[0].Data, "the screenshot first")
			require.Equal(t, logo, msg.Images[1].Data, "then the template image itself")
			require.Contains(t, msg.Content, "the template is image 2")
			require.NotContains(t, msg.Content, "logo.png", "not its path")
			require.Equal(t, 1100, v.Nodes[0].Tokens)
			require.Equal(t, 1100, v.Tokens)
			require.InDelta(t, (1000*0.40+100*1.60)/1e6, v.CostUSD, 1e-12)
		})
	}
}
