package runner_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/store"
)

// deltaWatch is an Observer that reports the first llm_delta event it is
// handed (after it was committed).
type deltaWatch struct {
	once  sync.Once
	first chan map[string]any
}

func (d *deltaWatch) Started(*store.Run, bool) {}
func (d *deltaWatch) Step(engine.StepRecord)   {}
func (d *deltaWatch) Note(runner.Note)         {}
func (d *deltaWatch) Event(ev engine.TimedEvent) {
	if ev.Type == "llm_delta" {
		d.once.Do(func() { d.first <- ev.Data })
	}
}

// An llm node streams: the run's stored events hold the start of the
// reply while the model is still answering (the fake server holds the
// stream open until the test saw it), and the step keeps the whole reply
// and the usage of the final chunk.
func TestLLMStreamsIntoTheRunsEvents(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flavor llmtest.Flavor
		model  string
	}{
		{llmtest.OpenAI, "gpt-4.1-mini"},
		{llmtest.Anthropic, "claude-haiku-4-5"},
	} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			t.Parallel()
			b := aiSetup(t)
			hold := make(chan struct{})
			reply := "Once upon a time, a fox streamed its story."
			srv := llmtest.NewServer(t, tc.flavor, llmtest.Script{
				{Text: reply, Usage: llm.Usage{InputTokens: 30, OutputTokens: 9}, Hold: hold},
			})
			release := sync.OnceFunc(func() { close(hold) })
			t.Cleanup(release) // before the server stops, should the test fail early
			w, err := b.r.Load(b.write(t, "story.yaml", `version: 1
name: story
llm:
  default: {provider: `+string(tc.flavor)+`, model: `+tc.model+`, base_url: "`+srv.BaseURL()+`", api_key: test}
nodes:
  - {id: tell, type: llm, prompt: "Tell a story."}
`))
			require.NoError(t, err)
			watch := &deltaWatch{first: make(chan map[string]any, 1)}
			id := runner.NewRunID()
			type result struct {
				res *runner.Result
				err error
			}
			done := make(chan result, 1)
			go func() {
				res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, RunID: id, Options: runner.Options{Observer: watch}})
				done <- result{res, err}
			}()

			select {
			case data := <-watch.first:
				require.Equal(t, "Once ", data["text"], "the first piece, at once")
			case r := <-done:
				t.Fatalf("the run ended before any llm_delta event: %+v %v", r.res, r.err)
			}
			// The event is in the run's stored events, and the step has
			// not finished: the model is still answering.
			evs, _, err := b.r.Events(b.ctx, id, 0, 0)
			require.NoError(t, err)
			var deltas []string
			for _, ev := range evs {
				if ev.Type == engine.EventNodeFinished && ev.Node == "tell" {
					t.Fatal("the step ended before the test let the reply go on")
				}
				if ev.Type == "llm_delta" {
					require.Equal(t, "tell", ev.Node)
					deltas = append(deltas, ev.Data["text"].(string))
				}
			}
			require.Equal(t, []string{"Once "}, deltas)
			release()

			r := <-done
			require.NoError(t, r.err)
			require.NoError(t, r.res.Err)
			require.Equal(t, "completed", string(r.res.Run.Status))
			require.True(t, srv.Last().Stream, "the node asked for a stream")
			doc, err := b.r.Get(b.ctx, id)
			require.NoError(t, err)
			require.Len(t, doc.Steps, 1)
			out := doc.Steps[0].Output
			require.Equal(t, reply, out["text"], "the step holds the whole reply")
			require.Equal(t, 39, doc.Steps[0].Tokens, "the usage of the final chunk")

			evs, _, err = b.r.Events(b.ctx, id, 0, 0)
			require.NoError(t, err)
			var all strings.Builder
			for _, ev := range evs {
				if ev.Type == "llm_delta" {
					all.WriteString(ev.Data["text"].(string))
				}
			}
			require.Equal(t, reply, all.String(), "the deltas add up to the reply")
		})
	}
}
