package openai

import (
	"testing"

	oai "github.com/openai/openai-go/v3"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
)

// Streamed tool calls are collected by the SDK's accumulator after
// callIndex has given each call an index of its own.
func TestStreamedToolCalls(t *testing.T) {
	t.Parallel()
	type delta struct {
		index          int64
		id, name, args string
	}
	tests := []struct {
		name   string
		deltas []delta
		want   []llm.ToolCall
	}{
		{
			name: "by index, interleaved",
			deltas: []delta{
				{0, "call_a", "get_weather", ""}, {1, "call_b", "get_time", ""},
				{0, "", "", `{"city":`}, {1, "", "", `{"zone":`}, {1, "", "", `"UTC"}`}, {0, "", "", `"Paris"}`},
			},
			want: []llm.ToolCall{
				{ID: "call_a", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}, RawArguments: `{"city":"Paris"}`},
				{ID: "call_b", Name: "get_time", Arguments: map[string]any{"zone": "UTC"}, RawArguments: `{"zone":"UTC"}`},
			},
		},
		{
			// Some OpenAI-compatible servers put every call at index 0.
			name: "same index, different ids",
			deltas: []delta{
				{0, "call_a", "get_weather", `{"city":"Paris"}`},
				{0, "call_b", "get_time", `{"zone":`}, {0, "", "", `"UTC"}`},
			},
			want: []llm.ToolCall{
				{ID: "call_a", Name: "get_weather", Arguments: map[string]any{"city": "Paris"}, RawArguments: `{"city":"Paris"}`},
				{ID: "call_b", Name: "get_time", Arguments: map[string]any{"zone": "UTC"}, RawArguments: `{"zone":"UTC"}`},
			},
		},
		{
			name:   "no id, no arguments",
			deltas: []delta{{0, "", "ping", ""}},
			want:   []llm.ToolCall{{ID: "call_0", Name: "ping", Arguments: map[string]any{}, RawArguments: ""}},
		},
		{
			name:   "arguments that are not an object",
			deltas: []delta{{0, "call_x", "f", `{"a":`}},
			want:   []llm.ToolCall{{ID: "call_x", Name: "f", RawArguments: `{"a":`}},
		},
		{name: "none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var (
				acc oai.ChatCompletionAccumulator
				ids callIndex
			)
			for _, d := range tt.deltas {
				chunk := oai.ChatCompletionChunk{ID: "chatcmpl-1", Choices: []oai.ChatCompletionChunkChoice{{
					Delta: oai.ChatCompletionChunkChoiceDelta{ToolCalls: []oai.ChatCompletionChunkChoiceDeltaToolCall{{
						Index: d.index, ID: d.id, Function: oai.ChatCompletionChunkChoiceDeltaToolCallFunction{Name: d.name, Arguments: d.args},
					}}},
				}}}
				ids.normalize(&chunk)
				require.True(t, acc.AddChunk(chunk))
			}
			if len(acc.Choices) == 0 {
				require.Empty(t, tt.want)
				return
			}
			require.Equal(t, tt.want, response(&acc.ChatCompletion).ToolCalls)
		})
	}
}
