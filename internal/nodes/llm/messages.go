package llm

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// messageList reads the messages parameter: a conversation of {role,
// content, tool_calls?, tool_call_id?} objects, such as the run's
// `{{ messages }}`. A tool call is {id, name, arguments} or OpenAI's
// {id, function: {name, arguments}}, with arguments an object or its JSON
// text.
func messageList(c *node.Call) ([]llm.Message, error) {
	var out []llm.Message
	for i, m := range c.List("messages") {
		mm, _ := m.(map[string]any)
		role, _ := mm["role"].(string)
		if role == "" {
			return nil, node.Failf(node.CategoryValidation, "messages", "messages[%d] has no role (system, user, assistant or tool)", i)
		}
		content, err := contentText(mm["content"])
		if err != nil {
			return nil, node.Failf(node.CategoryValidation, "messages", "messages[%d].content %v", i, err)
		}
		msg := llm.Message{Role: role, Content: content}
		msg.ToolCallID, _ = mm["tool_call_id"].(string)
		calls, _ := mm["tool_calls"].([]any)
		for j, tc := range calls {
			call, ok := toolCallOf(tc)
			if !ok {
				return nil, node.Failf(node.CategoryValidation, "messages", "messages[%d].tool_calls[%d] is not a tool call ({id, name, arguments})", i, j)
			}
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
		out = append(out, msg)
	}
	return out, nil
}

// checkMessages checks a messages list written in the file: each message
// is an object with a role (a template is checked when it renders).
func checkMessages(p map[string]any) []node.ParamError {
	list, ok := p["messages"].([]any)
	if !ok {
		return nil
	}
	var errs []node.ParamError
	for i, m := range list {
		mm, ok := m.(map[string]any)
		if !ok {
			errs = append(errs, node.ParamError{Param: fmt.Sprintf("messages[%d]", i), Message: "a message is {role, content, tool_calls?, tool_call_id?}"})
			continue
		}
		if _, ok := mm["role"]; !ok {
			errs = append(errs, node.ParamError{Param: fmt.Sprintf("messages[%d]", i), Message: "a message needs a role: system, user, assistant or tool"})
		}
	}
	return errs
}

// contentText is a message's content as text: a string, null, or a list
// of parts whose text parts ({type: text, text}, or plain strings) are
// joined.
func contentText(v any) (string, error) {
	parts, ok := v.([]any)
	if !ok {
		return node.Text(v)
	}
	var b strings.Builder
	for j, p := range parts {
		switch x := p.(type) {
		case string:
			b.WriteString(x)
		case map[string]any:
			if t, ok := x["text"].(string); ok {
				b.WriteString(t)
				continue
			}
			return "", fmt.Errorf("part %d has no text (only text parts are read)", j)
		default:
			return "", fmt.Errorf("part %d is not a text part", j)
		}
	}
	return b.String(), nil
}

func toolCallOf(v any) (llm.ToolCall, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return llm.ToolCall{}, false
	}
	call := llm.ToolCall{}
	call.ID, _ = m["id"].(string)
	call.Name, _ = m["name"].(string)
	args := m["arguments"]
	if fn, ok := m["function"].(map[string]any); ok {
		if call.Name == "" {
			call.Name, _ = fn["name"].(string)
		}
		if args == nil {
			args = fn["arguments"]
		}
	}
	if call.Name == "" {
		return llm.ToolCall{}, false
	}
	switch a := args.(type) {
	case map[string]any:
		call.Arguments = a
	case string:
		call.RawArguments = a
		var parsed map[string]any
		if json.Unmarshal([]byte(a), &parsed) == nil {
			call.Arguments = parsed
		}
	}
	return call, true
}

// confidenceOf is the confidence a schema'd reply reports: the answer's
// top-level confidence, when the schema declares it a number (or an
// integer). The engine checks it is from 0 to 1.
func confidenceOf(schema map[string]any, answer any) (any, bool) {
	props, _ := schema["properties"].(map[string]any)
	p, _ := props["confidence"].(map[string]any)
	if t, _ := p["type"].(string); t != "number" && t != "integer" {
		return nil, false
	}
	a, _ := answer.(map[string]any)
	v, ok := a["confidence"]
	return v, ok && v != nil
}
