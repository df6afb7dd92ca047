package rundoc_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/node"
)

// WriteJSON writes, a step at a time, the very text encoding/json writes
// of the whole document, compact.
func TestWriteJSONIsTheDocument(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	step := func(n string, out map[string]any) rundoc.Step {
		return rundoc.Step{Node: n, Type: "set", Status: "success", Visit: 1, Output: out, StartedAt: &now, FinishedAt: &now,
			Params: map[string]any{"values": map[string]any{"html": "<b>&</b>", "steps": []any{}}}}
	}
	tests := []struct {
		name string
		doc  rundoc.Doc
	}{
		{name: "no steps", doc: rundoc.Doc{ExecutionID: "r1", Workflow: "w", Status: "completed", Outputs: map[string]any{}}},
		{name: "a long tail", doc: rundoc.Doc{ExecutionID: "r1", Status: "completed",
			Inputs: map[string]any{"long": strings.Repeat("the inputs come after the steps ", 100)},
			Steps:  []rundoc.Step{step("a", map[string]any{"x": strings.Repeat("x", 300)}), step("b", nil)}}},
		{name: "one step", doc: rundoc.Doc{ExecutionID: "r1", Status: "failed", Steps: []rundoc.Step{step("a", nil)},
			Error: &node.Error{Code: "x", Message: "m"}}},
		{
			name: "steps and an output with its own steps key",
			doc: rundoc.Doc{ExecutionID: "r1", Status: "completed", StartedAt: now,
				Outputs: map[string]any{"steps": []any{}, "nested": map[string]any{"steps": []any{1, "two"}}, "long": strings.Repeat("more than a step ", 200)},
				Steps: []rundoc.Step{step("a", map[string]any{"x": 1}), step("b", map[string]any{"list": []any{map[string]any{"k": "v"}}}),
					step("c", map[string]any{"long": strings.Repeat("a step longer than the head of the document ", 100)})}},
		},
		{
			name: "strings that look like the steps key",
			doc: rundoc.Doc{ExecutionID: `"steps":[]`, Workflow: `\"steps\":[]`, Status: "completed",
				Outputs: map[string]any{"a": `x","steps":[]`, "steps": []any{}},
				Steps:   []rundoc.Step{step("a", map[string]any{"steps": []any{}})}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			require.NoError(t, enc.Encode(&tt.doc))
			var got bytes.Buffer
			require.NoError(t, tt.doc.WriteJSON(&got))
			require.Equal(t, want.String(), got.String())
		})
	}
}

// BenchmarkWriteJSON writes the run document of 1,000 set steps.
func BenchmarkWriteJSON(b *testing.B) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)
	doc := rundoc.Doc{ExecutionID: "r1", Workflow: "chain", Status: "completed", Outputs: map[string]any{"i": 999}, StartedAt: now}
	for i := range 1000 {
		doc.Steps = append(doc.Steps, rundoc.Step{Node: "n" + strconv.Itoa(i), Type: "set", Status: "success", Visit: 1, Attempts: 1,
			StartedAt: &now, FinishedAt: &now, ConfigHash: strings.Repeat("ab", 32),
			Params: map[string]any{"values": map[string]any{"i": i}}, Output: map[string]any{"i": i}})
	}
	var buf bytes.Buffer
	b.ReportAllocs()
	for b.Loop() {
		buf.Reset()
		if err := doc.WriteJSON(&buf); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(doc.Steps)), "ns/step")
	b.ReportMetric(float64(buf.Len())/float64(len(doc.Steps)), "B/step")
}
