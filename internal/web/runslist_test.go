package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestRunsListNumbers: the runs list shows each run's tokens and cost as
// numbers — a run that used no model 0 and $0.00.
func TestRunsListNumbers(t *testing.T) {
	t.Parallel()
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: "done", Usage: llm.Usage{InputTokens: 12000, OutputTokens: 3456}},
	})
	s := serve(t, map[string]string{"ask.yaml": `version: 1
name: ask
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "` + model.BaseURL() + `", api_key: test}
nodes:
  - {id: start, type: trigger.manual}
  - {id: answer, type: llm, prompt: "write"}
edges:
  - {from: start, to: answer}
`})
	ctx := browser(t)
	s.signIn(ctx)
	asked := s.start("ask")
	plain := s.start("hello")
	do(t, ctx, chromedp.Navigate(s.url+"/#/"))
	until(t, ctx, `document.querySelectorAll('tr[data-run="`+asked+`"][data-status="completed"], tr[data-run="`+plain+`"][data-status="completed"]').length === 2`)
	require.EqualValues(t, 15456, s.api("GET", "/api/runs/"+asked, nil)["tokens"])
	cells := func(id string) []string {
		return eval[[]string](t, ctx, `[...document.querySelectorAll('tr[data-run="`+id+`"] td.num')].map(td => td.textContent)`)
	}
	require.Equal(t, []string{"15,456", "$0.01"}, cells(asked), "tokens and cost of a run that used a model")
	require.Equal(t, []string{"0", "$0.00"}, cells(plain), "tokens and cost of a run that used none")
}
