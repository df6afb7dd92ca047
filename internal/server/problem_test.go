package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// A run's document is answered without reflection (its WriteJSON) in the
// very text encoding/json writes for it: steps with HTML, quotes and
// non-ASCII, a failed step's error, and outputs.
func TestRunDocumentAnswerIsEncodingJSONs(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	doc := &runner.RunDoc{ExecutionID: "r1", Workflow: "w", Status: "failed", StartedAt: now,
		Outputs: map[string]any{"html": "<b>&</b>", "steps": []any{}},
		Steps: []runner.StepDoc{
			{Node: "a", Type: "set", Status: "success", Visit: 1, StartedAt: &now, FinishedAt: &now,
				Output: map[string]any{"text": `a "quoted" é ☃`, "n": 1.5, "list": []any{map[string]any{}}}},
			{Node: "b", Type: "shell", Status: "failed", Visit: 1, StartedAt: &now,
				Error: &node.Error{Code: "exit_code", Message: "exit 3 <stderr>"}},
		},
		Error: &node.Error{Code: "exit_code", Message: "b failed"}}
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusOK, doc)
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	require.NoError(t, enc.Encode(doc))
	require.Equal(t, want.String(), rec.Body.String())
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
}
