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

// The judge's api_key may read a secret, as a node's model config does:
// the judge of `expect:` is sent the secret's value, never "Bearer <nil>".
func TestJudgeKeyReadsASecret(t *testing.T) {
	t.Parallel()
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.Reply(`{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "it greets Ada"}]}`),
	})
	dir := t.TempDir()
	file := filepath.Join(dir, "judged.yaml")
	require.NoError(t, os.WriteFile(file, []byte(strings.ReplaceAll(`version: 1
name: judged
secrets: [JUDGE_KEY]
llm:
  judge: {provider: openai, model: gpt-4.1-mini, base_url: "BASE", api_key: "{{ secrets.JUDGE_KEY }}"}
nodes:
  - {id: start, type: trigger.manual}
  - id: greet
    type: set
    values: {text: "Hello, Ada"}
    expect: "a greeting that names the user"
edges:
  - {from: start, to: greet}
`, "BASE", srv.BaseURL())), 0o644))
	env := func(k string) (string, bool) {
		if k == "SKEIN_SECRET_JUDGE_KEY" {
			return "sk-judge-0123456789", true
		}
		return "", false
	}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: env})
	require.NoError(t, err)
	defer r.Close()
	w, err := r.Load(file)
	require.NoError(t, err)
	res, err := r.Start(context.Background(), runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)
	require.NotNil(t, res.Verdict)
	require.Equal(t, "PASSED", res.Verdict.Status)
	require.Equal(t, 1, srv.Calls())
	require.Equal(t, "Bearer sk-judge-0123456789", srv.Last().Header.Get("Authorization"))
}
