package runner_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/internal/runner"
)

// fsServer is an MCP server with a write_file tool that writes into dir.
func fsServer(t *testing.T, dir string) *mcptest.Server {
	t.Helper()
	srv := mcptest.New(t)
	srv.AddTool("write_file", map[string]any{"type": "object", "properties": map[string]any{
		"path": map[string]any{"type": "string"}, "content": map[string]any{"type": "string"}}},
		func(_ context.Context, args map[string]any) (*sdk.CallToolResult, error) {
			p := filepath.Join(dir, filepath.Base(args["path"].(string)))
			if err := os.WriteFile(p, []byte(args["content"].(string)), 0o644); err != nil {
				return nil, err
			}
			return mcptest.Text("wrote " + p), nil
		})
	return srv
}

func approvingAgent(base, mcpURL string) string {
	return approvingAgentOn("openai", "gpt-4.1-mini", base, mcpURL)
}

func approvingAgentOn(provider, model, base, mcpURL string) string {
	return `version: 1
name: writer
llm:
  default: {provider: ` + provider + `, model: ` + model + `, base_url: "` + base + `", api_key: test}
mcp_servers:
  fs: {url: "` + mcpURL + `"}
nodes:
  - id: writer
    type: agent
    prompt: write the notes
    tools: [fs.*]
    approve_tools: [write_file]
outputs:
  answer: "{{ writer.text }}"
`
}

func writeCall(id, path, content string) llm.ToolCall {
	return llm.ToolCall{ID: id, Name: "fs__write_file", Arguments: map[string]any{"path": path, "content": content}}
}

// A tool call that approve_tools names waits for a person: the run parks
// (the step shows the call), an approval runs it, a denial gives the model
// a refusal as the tool's result, and the conversation goes on from where
// it stopped — the model is asked three times in all, not again for what
// it said before each wait (acceptance 4 of issue 16).
func TestAgentApproval(t *testing.T) {
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
			testAgentApproval(t, tc.flavor, tc.model)
		})
	}
}

func testAgentApproval(t *testing.T, flavor llmtest.Flavor, modelName string) {
	b := setupSignals(t, 0)
	out := t.TempDir()
	fs := fsServer(t, out)
	tokens := llm.Usage{InputTokens: 50, OutputTokens: 50, TotalTokens: 100}
	model := llmtest.NewServer(t, flavor, llmtest.Script{
		{ToolCalls: []llm.ToolCall{writeCall("c1", "a.txt", "first")}, Usage: tokens},
		{ToolCalls: []llm.ToolCall{writeCall("c2", "b.txt", "second")}, Usage: tokens},
		{Text: "wrote a.txt; b.txt was refused", Usage: tokens},
	})
	res := b.start(t, approvingAgentOn(string(flavor), modelName, model.BaseURL(), fs.URL), runner.Options{Park: park})
	require.Equal(t, "waiting", string(res.Run.Status), "%+v", res.Run.Error)
	id := res.Run.ID
	require.Equal(t, 1, model.Calls())
	require.NoFileExists(t, filepath.Join(out, "a.txt"), "nothing runs before the approval")

	doc, err := b.r.Get(b.ctx, id)
	require.NoError(t, err)
	step := stepOf(doc, "writer")
	require.Equal(t, "waiting", string(step.Status))
	approval := step.Output["approval"].(map[string]any)
	require.Equal(t, "fs.write_file", approval["tool"])
	require.Equal(t, map[string]any{"path": "a.txt", "content": "first"}, approval["arguments"])

	sig, err := b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "writer", Data: map[string]any{"approved": true}})
	require.NoError(t, err)
	require.Equal(t, id, sig.Resume)
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: id, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.NoError(t, again.Err)
	require.Equal(t, "waiting", string(again.Run.Status), "the second call waits too: %+v", again.Run.Error)
	require.FileExists(t, filepath.Join(out, "a.txt"), "the approved call ran")
	require.NoFileExists(t, filepath.Join(out, "b.txt"))
	require.Equal(t, 2, model.Calls())
	require.Contains(t, toolResult(t, model.Last(), "c1"), "wrote ")

	_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: id, Node: "writer", Data: map[string]any{"approved": false, "reason": "not b"}})
	require.NoError(t, err)
	done, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: id, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.NoError(t, done.Err)
	require.Equal(t, "completed", string(done.Run.Status), "%+v", done.Run.Error)
	require.Equal(t, "wrote a.txt; b.txt was refused", done.Run.Outputs["answer"])
	require.NoFileExists(t, filepath.Join(out, "b.txt"), "the denied call did not run")
	require.Equal(t, 3, model.Calls(), "the model was asked once per turn")
	refusal := toolResult(t, model.Last(), "c2")
	require.Contains(t, refusal, "did not approve")
	require.Contains(t, refusal, "not b")
	require.Equal(t, 300, done.Run.Tokens, "each turn counted once")

	doc, err = b.r.Get(b.ctx, id)
	require.NoError(t, err)
	step = stepOf(doc, "writer")
	require.Equal(t, "success", string(step.Status))
	require.EqualValues(t, 2, step.Output["tool_calls"])
	require.EqualValues(t, 300, step.Output["usage"].(map[string]any)["total_tokens"],
		"the step's usage adds up its parts (its record's tokens are what each execution spent)")
}

// The same approvals reach an agent whose run its process still holds
// (skein serve without parking): each signal is taken by the running
// execution, the first approving, the second denying.
func TestAgentApprovalLive(t *testing.T) {
	t.Parallel()
	b := setupSignals(t, 10*time.Millisecond)
	out := t.TempDir()
	fs := fsServer(t, out)
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		llmtest.CallTools(writeCall("c1", "a.txt", "first"), writeCall("c2", "b.txt", "second")),
		llmtest.Reply("done"),
	})
	p := filepath.Join(b.dir, "flow.yaml")
	require.NoError(t, os.WriteFile(p, []byte(approvingAgent(model.BaseURL(), fs.URL)), 0o644))
	w, err := b.r.Load(p)
	require.NoError(t, err)
	done := make(chan *runner.Result, 1)
	go func() {
		res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, RunID: "live0000002"})
		if err != nil {
			t.Errorf("Start: %v", err)
		}
		done <- res
	}()
	for _, data := range []any{map[string]any{"approved": true}, "no"} { // anything but approved: true refuses
		require.Eventually(t, func() bool {
			_, err = b.r.Signal(b.ctx, runner.SignalRequest{RunID: "live0000002", Node: "writer", Data: data})
			return err == nil
		}, 60*time.Second, 5*time.Millisecond, "writer waits for %v", data)
	}
	select {
	case res := <-done:
		require.Equal(t, "completed", string(res.Run.Status), "%+v", res.Run.Error)
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not take its signals")
	}
	require.FileExists(t, filepath.Join(out, "a.txt"))
	require.NoFileExists(t, filepath.Join(out, "b.txt"))
	require.Equal(t, 2, model.Calls(), "both calls came in one turn; the model was asked once more")
	require.Contains(t, toolResult(t, model.Last(), "c2"), "did not approve")
}

// A call whose arguments hold a secret's value shows it masked while it
// waits, in the step and the events. The conversation it parked with is
// stored masked too, so it is not reused: the agent starts over when the
// run resumes, and the approval, given for that very call, holds for it
// when the model makes it again (a different call would wait for a signal
// of its own).
func TestAgentApprovalMasksSecrets(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	env := func(k string) (string, bool) {
		if k == "SKEIN_SECRET_NOTE" {
			return "hush-0123456789", true
		}
		return "", false
	}
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), LookupEnv: env})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	out := t.TempDir()
	fs := fsServer(t, out)
	write := llmtest.CallTools(writeCall("c1", "a.txt", "the note is hush-0123456789"))
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{write, write, llmtest.Reply("done")})
	src := strings.Replace(approvingAgent(model.BaseURL(), fs.URL), "nodes:", "secrets: [NOTE]\nnodes:", 1)
	p := filepath.Join(dir, "flow.yaml")
	require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
	w, err := r.Load(p)
	require.NoError(t, err)
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.Equal(t, "waiting", string(res.Run.Status), "%+v", res.Run.Error)
	doc, err := r.Get(t.Context(), res.Run.ID)
	require.NoError(t, err)
	shown, err := json.Marshal(stepOf(doc, "writer").Output)
	require.NoError(t, err)
	require.NotContains(t, string(shown), "hush-0123456789")
	require.Contains(t, string(shown), "the note is ")
	evs, _, err := r.Events(t.Context(), res.Run.ID, 0, 0)
	require.NoError(t, err)
	raw, err := json.Marshal(evs)
	require.NoError(t, err)
	require.NotContains(t, string(raw), "hush-0123456789")
	require.Contains(t, string(raw), "tool_approval")

	_, err = r.Signal(t.Context(), runner.SignalRequest{RunID: res.Run.ID, Node: "writer", Data: map[string]any{"approved": true}})
	require.NoError(t, err)
	done, err := r.Resume(t.Context(), runner.ResumeRequest{RunID: res.Run.ID, Options: runner.Options{Park: park}})
	require.NoError(t, err)
	require.Equal(t, "completed", string(done.Run.Status), "%+v", done.Run.Error)
	content, err := os.ReadFile(filepath.Join(out, "a.txt"))
	require.NoError(t, err)
	require.Equal(t, "the note is hush-0123456789", string(content), "the tool got the real value")
	require.Equal(t, 3, model.Calls(), "the agent started over once")
}
