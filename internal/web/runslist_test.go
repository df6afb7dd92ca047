package web_test

import (
	"testing"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
)

// TestRunsListNumbers: the runs list shows how each run was started (api,
// chat, manual for the command line's, replay with a link to the run it
// replays), and its tokens and cost as numbers — a run that used no model
// 0 and $0.00.
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
	require.Equal(t, "api", trigger(plain), "a run started through the API")
	require.Equal(t, "api", trigger(asked))
	require.Equal(t, "chat", trigger(chat), "a run of a trigger.chat node")

	// A run the command line started, recorded, and its replay.
	w, err := s.r.Load("testdata/flows/hello.yaml")
	require.NoError(t, err)
	rec, err := s.r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"who": "Ada", "times": 1},
		Options: runner.Options{Record: true}})
	require.NoError(t, err)
	rep, err := s.r.Replay(t.Context(), runner.ReplayRequest{RunID: rec.Run.ID})
	require.NoError(t, err)
	require.NoError(t, rep.Err)
	until(t, ctx, `!!document.querySelector('tr[data-run="`+rep.Run.ID+`"]')`)
	require.Equal(t, "manual", trigger(rec.Run.ID), "a run of the command line is a manual one")
	require.Equal(t, "replay of "+rec.Run.ID, trigger(rep.Run.ID), "a replay names the run it replays")
	require.Equal(t, "#/runs/"+rec.Run.ID, eval[string](t, ctx,
		`document.querySelector('tr[data-run="`+rep.Run.ID+`"] td.trigger a.replay-of').getAttribute('href')`), "and links to it")

	// The replay's page names the run it replays too.
	do(t, ctx, chromedp.Navigate(s.url+"/#/runs/"+rep.Run.ID))
	until(t, ctx, `!!document.querySelector('section.run[data-run="`+rep.Run.ID+`"] .facts a.replay-of')`)
	require.Equal(t, "#/runs/"+rec.Run.ID, eval[string](t, ctx,
		`document.querySelector('section.run .facts a.replay-of').getAttribute('href')`))
}
