package scheduler

import (
	"fmt"
	"math"
	"sort"

	"github.com/skeinhq/skein/expr"
)

// Directives the scheduler and the drivers read from a node's result; any
// other _-prefixed key is dropped with a warning.
const (
	DirectiveRoute      = "_route"
	DirectiveStatePatch = "_state_patch"
	DirectiveDelay      = "_delay_seconds"
	DirectiveTokenUsage = "_token_usage"
	// DirectiveMessages appends chat messages ({role, content,
	// tool_calls?}) to the run's message list (Run.Messages).
	DirectiveMessages = "_messages"
	// DirectiveConfidence is the node's confidence in its result, a number
	// from 0 to 1 (the step's confidence_score, <node>.confidence).
	DirectiveConfidence = "_confidence"
)

// Known lists every directive a node may return.
var Known = []string{
	DirectiveRoute, DirectiveStatePatch, DirectiveDelay, DirectiveAwait, DirectiveAwaitName,
	DirectiveResume, DirectiveTokenUsage, DirectiveMessages, DirectiveConfidence,
}

// knownList is Known as text.
var knownList = func() string {
	s := ""
	for i, k := range Known {
		if i > 0 {
			s += ", "
		}
		s += k
	}
	return s
}()

// legacyOutputs is the key of a component's legacy result shape,
// {"node_outputs": {...}}, whose content is the node's output.
const legacyOutputs = "node_outputs"

// ConfidenceOf reads a result's _confidence: a number from 0 to 1. ok is
// false when there is none or it is not such a number.
func ConfidenceOf(directives map[string]any) (c float64, ok bool) {
	c, ok = number(directives[DirectiveConfidence])
	if !ok || math.IsNaN(c) || c < 0 || c > 1 {
		return 0, false
	}
	return c, true
}

// readDirectives acts on the directives of a succeeded task that the
// scheduler keeps for the run — _messages — and warns, naming the node,
// about those it cannot use: an unknown key, a _confidence that is not a
// number from 0 to 1, a _messages that is not a list of messages. It
// returns the node's confidence, when it gave one.
func (r *Run) readDirectives(f *frame, pn *PlanNode, d map[string]any) (float64, bool) {
	warn := func(format string, args ...any) {
		r.event(EventWarning, pn, f, map[string]any{"message": fmt.Sprintf(format, args...)})
	}
	keys := make([]string, 0, len(d))
	for k := range d {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !contains(Known, k) {
			warn("node %q returned the directive %q, which Skein does not know: ignored (the directives are %s)", pn.ID, k, knownList)
		}
	}
	if v, present := d[DirectiveDelay]; present {
		if secs, isNum := number(v); !isNum || secs < 0 || math.IsNaN(secs) {
			warn("node %q returned _delay_seconds %s, which is not a number of seconds, 0 or more: ignored", pn.ID, short(v))
		}
	}
	c, ok := ConfidenceOf(d)
	if v, present := d[DirectiveConfidence]; present && !ok {
		warn("node %q returned _confidence %s, which is not a number from 0 to 1: ignored", pn.ID, short(v))
	}
	if v, present := d[DirectiveMessages]; present {
		msgs, problem := messagesOf(v)
		if problem != "" {
			warn("node %q returned _messages that %s: ignored (each message is {role, content, tool_calls?})", pn.ID, problem)
		} else if len(msgs) > 0 {
			// A new list: the tasks started before keep the one they saw.
			r.messages = append(r.messages[:len(r.messages):len(r.messages)], msgs...)
		}
	}
	return c, ok
}

// messagesOf checks that v is a list of chat messages — objects with a
// string role, a content that is a string, a list or null, and tool_calls,
// when present, a list — and returns them. problem says what is wrong.
func messagesOf(v any) (msgs []any, problem string) {
	list, ok := v.([]any)
	if !ok {
		if m, isMsg := v.(map[string]any); isMsg {
			list = []any{m} // one message
		} else {
			return nil, fmt.Sprintf("are a %s, not a list", typeName(v))
		}
	}
	for i, x := range list {
		m, ok := x.(map[string]any)
		if !ok {
			return nil, fmt.Sprintf("hold a %s at index %d, not a message object", typeName(x), i)
		}
		if role, ok := m["role"].(string); !ok || role == "" {
			return nil, fmt.Sprintf("hold a message without a role at index %d", i)
		}
		switch m["content"].(type) {
		case string, []any, nil:
		default:
			return nil, fmt.Sprintf("hold a message whose content is a %s at index %d (a string or a list of parts)", typeName(m["content"]), i)
		}
		if tc, present := m["tool_calls"]; present && tc != nil {
			if _, ok := tc.([]any); !ok {
				return nil, fmt.Sprintf("hold a message whose tool_calls is a %s at index %d, not a list", typeName(tc), i)
			}
		}
	}
	return list, ""
}

// mergeLegacy applies a component's legacy result shape: an output with a
// node_outputs object has that object's content as its output, merged over
// the other keys. When node_outputs is keyed by the node's own id (as a
// component that wrapped its result itself wrote it), the value under
// that id is the content, normalised as a result is (expr.Normalize);
// else node_outputs itself is.
func mergeLegacy(nodeID string, out map[string]any) map[string]any {
	lo, ok := out[legacyOutputs].(map[string]any)
	if !ok {
		return out
	}
	content := lo
	if own, ok := lo[nodeID]; ok {
		content = expr.Normalize(own)
	}
	merged := make(map[string]any, len(out)+len(content))
	for k, v := range out {
		if k != legacyOutputs {
			merged[k] = v
		}
	}
	for k, v := range content {
		merged[k] = v
	}
	return merged
}

// Messages returns the run's message list: the _messages of its steps, in
// the order they succeeded.
func (r *Run) Messages() []any { return r.messages }

func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64, float32, int, int64:
		return "number"
	case []any:
		return "list"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func short(v any) string {
	s := fmt.Sprint(v)
	if str, ok := v.(string); ok {
		s = fmt.Sprintf("%q", str)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// number reads a JSON number of a directive.
func number(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case float32:
		return float64(x), true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	return 0, false
}
