package main_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
)

// An OpenAI-compatible server that ignores `stream` and answers each
// request with one chat.completion body runs examples/extract.yaml to
// success, and the run says once, for the node, that the server did not
// stream.
func TestExtractOnAServerThatIgnoresStream(t *testing.T) {
	t.Parallel()
	answer := `{"category": "billing", "order_id": "1042", "customer": "Dana", "summary": "Dana was charged twice for order 1042 and asks for a refund."}`
	model := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
		{Text: answer, Usage: llm.Usage{InputTokens: 120, OutputTokens: 40}, IgnoreStream: true},
	})
	dir := t.TempDir()
	cmd := exec.Command(bin, "run", "--dir", dir, "--output", "json", "../../examples/extract.yaml")
	cmd.Env = append(os.Environ(), "SKEIN_LLM_PROVIDER=openai", "SKEIN_LLM_BASE_URL="+model.BaseURL(),
		"SKEIN_LLM_MODEL=local-model", "SKEIN_LLM_API_KEY=fake")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "stdout: %s\nstderr: %s", stdout.String(), stderr.String())

	var res struct {
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &res), stdout.String())
	require.Equal(t, "completed", res.Status)
	require.Equal(t, map[string]any{
		"category": "billing",
		"customer": "Dana",
		"ticket":   "[BILLING] order 1042: Dana was charged twice for order 1042 and asks for a refund.",
	}, res.Outputs)
	require.Equal(t, 1, model.Calls())
	require.True(t, model.Last().Stream, "the node asked for a stream")

	runs, err := filepath.Glob(filepath.Join(dir, "runs", "extract", "*", "events.jsonl"))
	require.NoError(t, err)
	require.Len(t, runs, 1)
	f, err := os.Open(runs[0])
	require.NoError(t, err)
	defer f.Close()
	var warnings []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &ev))
		if ev["type"] == "warning" {
			warnings = append(warnings, ev)
		}
	}
	require.NoError(t, sc.Err())
	var unstreamed []map[string]any
	for _, w := range warnings {
		if data := w["data"].(map[string]any); data["unstreamed"] == true {
			require.Equal(t, "extract", w["node"])
			require.Contains(t, data["message"], "Set stream: false on node extract")
			unstreamed = append(unstreamed, w)
		}
	}
	require.Len(t, unstreamed, 1, "one warning: %v", warnings)
}
