package runner_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
)

// An llm node whose reply is {"_route": "billing"} routes the run: the
// billing branch runs and the support branch is skipped (both were
// skipped, and the run "completed").
func TestLLMReplyRoutes(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, reply, schema string }{
		{"text", ` {"_route": "billing", "why": "an invoice"} `, ""},
		{"schema", `{"_route": "billing"}`, `
    schema: {type: object, required: [_route], properties: {_route: {type: string, enum: [billing, support]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply(tc.reply)})
			dir := t.TempDir()
			file := filepath.Join(dir, "triage.yaml")
			require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(`version: 1
name: triage
llm:
  default: {provider: openai, model: gpt-4.1-mini, base_url: "BASE", api_key: test}
nodes:
  - {id: start, type: trigger.manual}
  - id: classify
    type: llm
    prompt: "Route this ticket: my invoice is wrong"`+tc.schema+`
  - {id: billing, type: set, values: {team: billing}}
  - {id: support, type: set, values: {team: support}}
edges:
  - {from: start, to: classify}
  - {from: classify, to: billing, on: billing}
  - {from: classify, to: support, on: support}
outputs:
  team: "{{ billing.team ?? support.team }}"
`, "BASE", srv.BaseURL())), 0o644))
			r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: func(string) (string, bool) { return "", false }})
			require.NoError(t, err)
			defer r.Close()
			w, err := r.Load(file)
			require.NoError(t, err)
			res, err := r.Start(context.Background(), runner.StartRequest{Workflow: w})
			require.NoError(t, err)
			require.NoError(t, res.Err)
			require.Equal(t, "completed", string(res.Run.Status))
			require.Equal(t, "billing", res.Run.Outputs["team"])
			status := map[string]string{}
			for _, s := range res.Engine.Steps {
				status[s.Node] = string(s.Status)
			}
			require.Equal(t, "success", status["billing"])
			require.Equal(t, "skipped", status["support"])
		})
	}
}
