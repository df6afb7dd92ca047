package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
)

// eventLog records a run's events.
type eventLog struct {
	mu     sync.Mutex
	events []engine.Event
}

func (l *eventLog) Step(*engine.StepRecord) error { return nil }
func (l *eventLog) Event(ev engine.TimedEvent) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev.Event)
	return nil
}

// warnings returns the messages of the warning events about node.
func (l *eventLog) warnings(node string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, ev := range l.events {
		if ev.Type == engine.EventWarning && ev.Node == node {
			out = append(out, ev.Data["message"].(string))
		}
	}
	return out
}

// TestDirectives: what the engine does with _messages, _confidence, a
// legacy node_outputs result and a directive it does not know, as the run
// document's steps, outputs and warning events show it.
func TestDirectives(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		nodes string
		check func(t *testing.T, res *engine.Result, log *eventLog)
	}{
		{
			name: "messages append in step order and templates read them",
			nodes: `
  - {id: a, type: act, out: {_messages: [{role: user, content: hi}]}}
  - {id: b, type: act, out: {_messages: [{role: assistant, content: hello, tool_calls: [{id: c1, name: look}]}]}}
  - {id: c, type: act, out: {n: "{{ len(messages) }}", last: "{{ messages[1].content }}"}}
`,
			check: func(t *testing.T, res *engine.Result, log *eventLog) {
				out := stepsOf(res, "c")[0].Output
				require.Equal(t, 2, out["n"])
				require.Equal(t, "hello", out["last"])
				require.Equal(t, []any{
					map[string]any{"role": "user", "content": "hi"},
					map[string]any{"role": "assistant", "content": "hello", "tool_calls": []any{map[string]any{"id": "c1", "name": "look"}}},
				}, res.Outputs["msgs"])
				require.Empty(t, log.warnings("a"))
			},
		},
		{
			name: "a bad _messages warns and is ignored",
			nodes: `
  - {id: a, type: act, out: {_messages: [{content: no role}]}}
  - {id: b, type: act, out: {_messages: "text"}}
  - {id: c, type: act, out: {n: "{{ len(messages) }}"}}
`,
			check: func(t *testing.T, res *engine.Result, log *eventLog) {
				require.Equal(t, 0, stepsOf(res, "c")[0].Output["n"])
				require.Len(t, log.warnings("a"), 1)
				require.Contains(t, log.warnings("a")[0], `node "a" returned _messages that hold a message without a role at index 0`)
				require.Contains(t, log.warnings("b")[0], `node "b" returned _messages that are a string, not a list`)
			},
		},
		{
			name: "confidence is stored on the step and read as node.confidence",
			nodes: `
  - {id: a, type: act, out: {v: 1, _confidence: 0.75}}
  - {id: b, type: act, out: {_confidence: 1.5}}
  - {id: c, type: act, out: {_confidence: "high"}}
  - {id: d, type: act, out: {seen: "{{ a.confidence }}"}}
`,
			check: func(t *testing.T, res *engine.Result, log *eventLog) {
				a := stepsOf(res, "a")[0]
				require.NotNil(t, a.Confidence)
				require.Equal(t, 0.75, *a.Confidence)
				require.Equal(t, 0.75, stepsOf(res, "d")[0].Output["seen"])
				require.Nil(t, stepsOf(res, "b")[0].Confidence, "out of range: no confidence")
				require.Nil(t, stepsOf(res, "c")[0].Confidence, "not a number: no confidence")
				require.NotContains(t, stepsOf(res, "b")[0].Output, "confidence")
				require.Contains(t, log.warnings("b")[0], `node "b" returned _confidence 1.5, which is not a number from 0 to 1`)
				require.Contains(t, log.warnings("c")[0], `node "c" returned _confidence "high"`)
				require.Empty(t, log.warnings("a"))
			},
		},
		{
			name: "a _delay_seconds that is not a number of seconds warns and is ignored",
			nodes: `
  - {id: a, type: act, out: {_delay_seconds: "abc"}}
  - {id: b, type: act, out: {_delay_seconds: -5}}
  - {id: c, type: act, out: {_delay_seconds: 0}}
`,
			check: func(t *testing.T, res *engine.Result, log *eventLog) {
				require.Equal(t, engine.RunCompleted, res.Status)
				require.Contains(t, log.warnings("a")[0], `node "a" returned _delay_seconds "abc", which is not a number of seconds, 0 or more: ignored`)
				require.Contains(t, log.warnings("b")[0], `node "b" returned _delay_seconds -5, which is not a number`)
				require.Empty(t, log.warnings("c"))
			},
		},
		{
			name: "an unknown directive warns with its name and the node's",
			nodes: `
  - {id: a, type: act, out: {v: 1, _rout: b}}
  - {id: b, type: act}
  - {id: c, type: act}
`,
			check: func(t *testing.T, res *engine.Result, log *eventLog) {
				w := log.warnings("a")
				require.Len(t, w, 1)
				require.Contains(t, w[0], `node "a" returned the directive "_rout", which Skein does not know`)
				require.Equal(t, map[string]any{"v": 1, "success": true}, stepsOf(res, "a")[0].Output, "dropped from the output")
			},
		},
		{
			name: "a legacy node_outputs result is the node's output",
			nodes: `
  - {id: a, type: act, out: {node_outputs: {a: {answer: 42}}, kept: true}}
  - {id: b, type: act, out: {node_outputs: {answer: 7}}}
  - {id: c, type: act, out: {sum: "{{ a.answer + b.answer }}"}}
`,
			check: func(t *testing.T, res *engine.Result, log *eventLog) {
				require.Equal(t, map[string]any{"answer": 42, "kept": true, "success": true}, stepsOf(res, "a")[0].Output)
				require.Equal(t, map[string]any{"answer": 7, "success": true}, stepsOf(res, "b")[0].Output)
				require.Equal(t, 49, stepsOf(res, "c")[0].Output["sum"])
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// A chain start → each node in order.
			var ids []string
			for _, line := range strings.Split(strings.TrimSpace(tc.nodes), "\n") {
				id := strings.TrimPrefix(strings.TrimSpace(line), "- {id: ")
				ids = append(ids, id[:strings.Index(id, ",")])
			}
			edges := "  - {from: start, to: " + ids[0] + "}\n"
			for i := 1; i < len(ids); i++ {
				edges += "  - {from: " + ids[i-1] + ", to: " + ids[i] + "}\n"
			}
			src := "version: 1\nname: t\nnodes:\n  - {id: start, type: trigger.manual}\n" + strings.TrimLeft(tc.nodes, "\n") +
				"edges:\n" + edges + "outputs:\n  msgs: \"{{ messages }}\"\n"
			b := setupDriver(t, src)
			log := &eventLog{}
			res := result(t, b.execute(context.Background(), engine.Options{Host: engine.Host{Recorder: log}}))
			require.Equal(t, engine.RunCompleted, res.Status, "%v", res.Error)
			tc.check(t, res, log)
		})
	}
}

// TestMessagesKeptOnReuse: a step reused from an earlier execution (a
// resume) brings its _messages back, so the run's list is the same.
func TestMessagesKeptOnReuse(t *testing.T) {
	t.Parallel()
	b := setupDriver(t, `version: 1
name: t
nodes:
  - {id: start, type: trigger.manual}
  - {id: a, type: act, out: {_messages: [{role: user, content: fresh}]}}
  - {id: c, type: act, out: {said: "{{ messages[0].content }}"}}
edges:
  - {from: start, to: a}
  - {from: a, to: c}
`)
	reuse := func(q engine.ReuseQuery) (engine.Reused, bool) {
		if q.Node != "a" {
			return engine.Reused{}, false
		}
		return engine.Reused{Output: map[string]any{}, Directives: map[string]any{
			"_messages": []any{map[string]any{"role": "user", "content": "from the earlier execution"}}}}, true
	}
	res := result(t, b.execute(context.Background(), engine.Options{Host: engine.Host{Reuse: reuse}}))
	require.Equal(t, engine.RunCompleted, res.Status)
	require.True(t, stepsOf(res, "a")[0].Cached)
	require.Equal(t, "from the earlier execution", stepsOf(res, "c")[0].Output["said"])
}
