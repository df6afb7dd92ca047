package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/internal/runner"
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
			require.Equal(t, "failed", res.Run.Status)
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
	require.Equal(t, "failed", res.Run.Status)
	require.Equal(t, 600, res.Run.Tokens)

	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "failed", again.Run.Status)
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
	require.Equal(t, "failed", third.Status)
	require.Equal(t, "budget_exceeded", third.Error.Category)
}
