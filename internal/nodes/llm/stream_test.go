package llm_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	nodellm "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/node"
)

// clock is a test clock that moves step forward each time it is read.
type clock struct {
	mu   sync.Mutex
	now  time.Time
	step time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(c.step)
	return c.now
}

// story is a reply long enough to be cut into several events.
var story = strings.Repeat("The fox ran through the quiet wood and sang. ", 10)

// The llm and agent kinds stream by default: the reply's text goes out as
// llm_delta events (the first piece at once, then at most one event per
// 100 ms or 200 characters, each ending at a blank) that add up to the
// reply; the output holds the whole reply and the final chunk's usage.
func TestStreamDeltas(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		flavor llmtest.Flavor
		kind   node.Kind
		params map[string]any
		// step is how far the clock moves at each reading.
		step time.Duration
		// events checks the llm_delta texts.
		events func(t *testing.T, texts []string)
	}{
		{
			name: "llm, clock stopped: cut by size", flavor: llmtest.OpenAI, kind: nodellm.LLMKind{},
			params: map[string]any{"prompt": "Tell a story."},
			events: func(t *testing.T, texts []string) {
				require.Equal(t, "The ", texts[0], "the first piece at once")
				require.Len(t, texts, 4, "then one event per 200 characters, and the rest at the end")
				for _, s := range texts[1 : len(texts)-1] {
					require.GreaterOrEqual(t, len(s), 190)
					require.True(t, strings.HasSuffix(s, " "), "%q ends at a blank", s)
				}
			},
		},
		{
			name: "llm, clock running: cut by time", flavor: llmtest.Anthropic, kind: nodellm.LLMKind{},
			params: map[string]any{"prompt": "Tell a story."},
			step:   150 * time.Millisecond,
			events: func(t *testing.T, texts []string) {
				require.Greater(t, len(texts), 40, "an event at each blank once 100 ms passed")
			},
		},
		{
			name: "agent", flavor: llmtest.OpenAI, kind: nodellm.AgentKind{},
			params: map[string]any{"prompt": "Tell a story."},
			events: func(t *testing.T, texts []string) {
				require.Equal(t, "The ", texts[0])
			},
		},
		{
			name: "stream false", flavor: llmtest.Anthropic, kind: nodellm.LLMKind{},
			params: map[string]any{"prompt": "Tell a story.", "stream": false},
			events: func(t *testing.T, texts []string) {
				require.Empty(t, texts, "no deltas when the node does not stream")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, tt.flavor, llmtest.Script{{Text: story, Usage: llm.Usage{InputTokens: 40, OutputTokens: 90}}})
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, tt.flavor), tt.params, nil)
			clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), step: tt.step}
			b.call.Now = clk.Now
			out, err := b.run(t, tt.kind)
			require.Nil(t, err)
			require.Equal(t, story, out["text"], "the output holds the whole reply")
			require.Equal(t, 130, out["usage"].(map[string]any)["total_tokens"], "the final chunk's usage")
			require.Equal(t, tt.params["stream"] != false, srv.Last().Stream)

			var texts []string
			for _, d := range b.events.ofKind("llm_delta") {
				texts = append(texts, d["text"].(string))
			}
			tt.events(t, texts)
			if len(texts) > 0 {
				require.Equal(t, story, strings.Join(texts, ""), "the deltas add up to the reply")
			}
		})
	}
}

// A secret the model repeats is masked whole in the deltas, though the
// stream cut it in pieces.
func TestStreamDeltasMaskSecrets(t *testing.T) {
	t.Parallel()
	reply := "Your token is s3cr3t-token, keep it safe."
	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply(reply)})
	b := setup(t, models(map[string]*llmtest.Server{"default": srv}, llmtest.OpenAI), map[string]any{"prompt": "What is my token?"}, nil)
	clk := &clock{now: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), step: time.Second}
	b.call.Now = clk.Now
	_, err := b.run(t, nodellm.LLMKind{})
	require.Nil(t, err)
	deltas := b.events.ofKind("llm_delta")
	require.Greater(t, len(deltas), 3, "an event at each blank")
	var all strings.Builder
	for _, d := range deltas {
		text := d["text"].(string)
		require.NotContains(t, text, "s3cr")
		all.WriteString(text)
	}
	require.NotContains(t, all.String(), "s3cr3t")
	require.Contains(t, all.String(), "keep it safe.")
}

// A server that answers a streamed request with one JSON body gives the
// whole reply, and the step one warning however many calls it makes.
func TestStreamIgnoredByTheServer(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name   string
		flavor llmtest.Flavor
		kind   node.Kind
		script llmtest.Script
		params map[string]any
	}{
		{name: "llm, openai", flavor: llmtest.OpenAI, kind: nodellm.LLMKind{},
			script: llmtest.Script{{Text: "Bonjour.", IgnoreStream: true}}, params: map[string]any{"prompt": "Say hello in French."}},
		{name: "llm, anthropic", flavor: llmtest.Anthropic, kind: nodellm.LLMKind{},
			script: llmtest.Script{{Text: "Bonjour.", IgnoreStream: true}}, params: map[string]any{"prompt": "Say hello in French."}},
		{name: "agent, a re-ask of a bad schema reply", flavor: llmtest.OpenAI, kind: nodellm.AgentKind{},
			script: llmtest.Script{{Text: "Bonjour.", IgnoreStream: true}, {Text: `{"greeting": "Bonjour."}`, IgnoreStream: true}},
			params: map[string]any{"prompt": "Say hello in French.", "schema": map[string]any{"type": "object", "required": []any{"greeting"}}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv := llmtest.NewServer(t, tt.flavor, tt.script)
			b := setup(t, models(map[string]*llmtest.Server{"default": srv}, tt.flavor), tt.params, nil)
			out, err := b.run(t, tt.kind)
			require.Nil(t, err)
			require.True(t, srv.Last().Stream, "the node asked for a stream")
			require.Equal(t, len(tt.script), srv.Calls())
			if _, ok := tt.params["schema"]; ok {
				require.Equal(t, map[string]any{"greeting": "Bonjour."}, out["json"])
			} else {
				require.Equal(t, "Bonjour.", out["text"])
			}
			warnings := b.events.ofKind("warning")
			require.Len(t, warnings, 1, "one warning for the step")
			require.Equal(t, true, warnings[0]["unstreamed"])
			require.Contains(t, warnings[0]["message"], "node n: the server of model")
			require.Contains(t, warnings[0]["message"], "Set stream: false on node n")
			require.Contains(t, warnings[0]["message"], "or on the model for every node (llm: {default: {…, stream: false}})")
		})
	}
}
