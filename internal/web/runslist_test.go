package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// TestRunsListNumbers: the runs list shows each run's trigger by its kind
// (manual, chat), and its tokens and cost as numbers — a run that used no
// model 0 and $0.00.
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
`, "talk.yaml": `version: 1
name: talk
nodes:
  - {id: hi, type: trigger.chat}
  - {id: answer, type: template, text: "you said {{ hi.message }}"}
edges:
  - {from: hi, to: answer}
outputs:
  reply: "{{ answer.text }}"
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

	chat := s.api("POST", "/api/chat/talk", map[string]any{"message": "hello"})["execution_id"].(string)
	until(t, ctx, `!!document.querySelector('tr[data-run="`+chat+`"]')`)
	trigger := func(id string) string {
		return eval[string](t, ctx, `document.querySelector('tr[data-run="`+id+`"] td.trigger').textContent`)
	}
	require.Equal(t, "manual", trigger(plain), "a run started at a trigger.manual node")
	require.Equal(t, "manual", trigger(asked))
	require.Equal(t, "chat", trigger(chat), "a run of a trigger.chat node")
}
