package runner_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/runner"
)

// memoryFlow is an agent that remembers the conversation named by its
// input, and is told a secret.
const memoryFlow = `version: 1
name: remembers
secrets: [KEY]
inputs:
  conversation: {type: string}
  message: {type: string}
llm:
  default: {provider: PROVIDER, model: MODEL, base_url: "BASE", api_key: test}
nodes:
  - id: answer
    type: agent
    system: You are terse.
    prompt: "{{ inputs.message }} (key: {{ secrets.KEY }})"
    memory: {thread: "{{ inputs.conversation }}", max_messages: 2}
    send_secrets: true
outputs:
  reply: "{{ answer.text }}"
`

// TestMemoryAcrossRuns: an agent with memory sees the earlier turns of its
// thread, in the store, in both API flavors. A rerun replaces the turn of
// the run it re-runs instead of adding a second copy; another thread starts
// empty; a secret the user sent is kept masked; max_messages keeps the
// last messages only.
func TestMemoryAcrossRuns(t *testing.T) {
	t.Parallel()
	const secret = "sk-memory-1234567890"
	for _, tc := range []struct {
		flavor llmtest.Flavor
		model  string
	}{
		{llmtest.OpenAI, "gpt-4.1-mini"},
		{llmtest.Anthropic, "claude-haiku-4-5"},
	} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, tc.flavor, llmtest.Script{
				llmtest.Reply("Hello Ada."),
				llmtest.Reply("Hello again, Ada."),
				llmtest.Reply("You are Ada."),
				llmtest.Reply("Nice to meet you."),
				llmtest.Reply("Still Ada."),
			})
			dir := t.TempDir()
			file := filepath.Join(dir, "remembers.yaml")
			src := strings.NewReplacer("PROVIDER", string(tc.flavor), "MODEL", tc.model, "BASE", srv.BaseURL()).Replace(memoryFlow)
			require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
			env := func(k string) (string, bool) {
				if k == "KEY" {
					return secret, true
				}
				return "", false
			}
			r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: env})
			require.NoError(t, err)
			t.Cleanup(func() { require.NoError(t, r.Close()) })
			w, err := r.Load(file)
			require.NoError(t, err)
			say := func(conv, message string) *runner.Result {
				t.Helper()
				res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Inputs: map[string]any{"conversation": conv, "message": message}})
				require.NoError(t, err)
				require.NoError(t, res.Err)
				require.Equal(t, "completed", string(res.Run.Status))
				return res
			}
			turns := func(req *llmtest.Request) []string {
				var out []string
				for _, m := range req.Messages {
					if m.Role != llm.RoleSystem {
						out = append(out, m.Role+": "+m.Content)
					}
				}
				return out
			}

			first := say("c-1", "I am Ada")
			require.Equal(t, []string{"user: I am Ada (key: " + secret + ")"}, turns(srv.Requests()[0]), "the first turn has no memory")

			again, err := r.Rerun(t.Context(), runner.RerunRequest{RunID: first.Run.ID})
			require.NoError(t, err)
			require.NoError(t, again.Err)
			require.Len(t, turns(srv.Requests()[1]), 1, "a rerun does not see the turn it re-runs")

			say("c-1", "Who am I?")
			third := srv.Requests()[2]
			require.Equal(t, []string{
				"user: I am Ada (key: ***)",
				"assistant: Hello again, Ada.",
				"user: Who am I? (key: " + secret + ")",
			}, turns(third), "the thread's turn once, masked, the rerun's answer in place of the first")

			say("c-2", "Hi")
			require.Equal(t, []string{"user: Hi (key: " + secret + ")"}, turns(srv.Requests()[3]), "another thread starts empty")

			say("c-1", "And now?")
			require.Equal(t, []string{
				"user: Who am I? (key: ***)", "assistant: You are Ada.",
				"user: And now? (key: " + secret + ")",
			}, turns(srv.Requests()[4]), "max_messages: 2 recalls the last two")
		})
	}
}
