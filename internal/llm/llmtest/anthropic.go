package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/skeinhq/skein/internal/llm"
)

// decodeAnthropic reads a Messages API request back into llm types. A
// user turn holding tool_result blocks becomes one tool message per
// result.
func decodeAnthropic(r *Request) error {
	b := r.Body
	r.Model, _ = b["model"].(string)
	r.Stream, _ = b["stream"].(bool)
	if t, ok := b["temperature"].(float64); ok {
		r.Temperature = &t
	}
	n, ok := b["max_tokens"].(float64)
	if !ok || n <= 0 {
		return fmt.Errorf("max_tokens is required")
	}
	r.MaxTokens = int(n)
	switch s := b["system"].(type) {
	case nil:
	case string:
		r.Messages = append(r.Messages, llm.System(s))
	case []any:
		for i, x := range s {
			blk, _ := x.(map[string]any)
			text, ok := blk["text"].(string)
			if blk["type"] != "text" || !ok {
				return fmt.Errorf("system block %d is not a text block", i)
			}
			r.Messages = append(r.Messages, llm.System(text))
		}
	default:
		return fmt.Errorf("system is %T", s)
	}
	msgs, ok := b["messages"].([]any)
	if !ok {
		return fmt.Errorf("messages is not a list")
	}
	for i, x := range msgs {
		m, _ := x.(map[string]any)
		out, err := decodeAnthropicMessage(m)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		r.Messages = append(r.Messages, out...)
	}
	if tools, ok := b["tools"].([]any); ok {
		for i, x := range tools {
			t, _ := x.(map[string]any)
			tool := llm.Tool{}
			tool.Name, _ = t["name"].(string)
			tool.Description, _ = t["description"].(string)
			tool.InputSchema, _ = t["input_schema"].(map[string]any)
			if tool.Name == "" || tool.InputSchema == nil {
				return fmt.Errorf("tool %d needs a name and an input_schema", i)
			}
			r.Tools = append(r.Tools, tool)
		}
	}
	if oc, ok := b["output_config"].(map[string]any); ok {
		if f, ok := oc["format"].(map[string]any); ok {
			r.Schema, _ = f["schema"].(map[string]any)
		}
	}
	if name := forcedTool(b); r.Schema == nil && name != "" {
		for _, t := range r.Tools {
			if t.Name == name {
				r.Schema = t.InputSchema
			}
		}
	}
	return nil
}

// forcedTool is the tool tool_choice forces, or "".
func forcedTool(body map[string]any) string {
	tc, _ := body["tool_choice"].(map[string]any)
	if tc["type"] != "tool" {
		return ""
	}
	name, _ := tc["name"].(string)
	return name
}

func decodeAnthropicMessage(m map[string]any) ([]llm.Message, error) {
	role, _ := m["role"].(string)
	if role != "user" && role != "assistant" {
		return nil, fmt.Errorf("role %q is neither user nor assistant", role)
	}
	var blocks []any
	switch c := m["content"].(type) {
	case string:
		return []llm.Message{{Role: role, Content: c}}, nil
	case []any:
		blocks = c
	default:
		return nil, fmt.Errorf("content is %T", c)
	}
	var out []llm.Message
	cur := llm.Message{Role: role}
	var texts []string
	flush := func() {
		cur.Content = strings.Join(texts, "\n")
		if cur.Content != "" || len(cur.Images) > 0 || len(cur.ToolCalls) > 0 {
			out = append(out, cur)
		}
		cur, texts = llm.Message{Role: role}, nil
	}
	for j, x := range blocks {
		blk, _ := x.(map[string]any)
		switch blk["type"] {
		case "text":
			s, _ := blk["text"].(string)
			if s == "" {
				return nil, fmt.Errorf("block %d: text blocks must be non-empty", j)
			}
			texts = append(texts, s)
		case "image":
			img, err := decodeAnthropicImage(blk)
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			cur.Images = append(cur.Images, img)
		case "tool_use":
			if role != "assistant" {
				return nil, fmt.Errorf("block %d: tool_use in a %s turn", j, role)
			}
			call := llm.ToolCall{}
			call.ID, _ = blk["id"].(string)
			call.Name, _ = blk["name"].(string)
			input, ok := blk["input"].(map[string]any)
			if !ok {
				return nil, fmt.Errorf("block %d: tool_use input is not an object", j)
			}
			call.Arguments = input
			raw, _ := json.Marshal(input)
			call.RawArguments = string(raw)
			cur.ToolCalls = append(cur.ToolCalls, call)
		case "tool_result":
			if role != "user" {
				return nil, fmt.Errorf("block %d: tool_result in a %s turn", j, role)
			}
			flush()
			res, err := decodeToolResult(blk)
			if err != nil {
				return nil, fmt.Errorf("block %d: %w", j, err)
			}
			out = append(out, res)
		default:
			return nil, fmt.Errorf("block %d has unknown type %v", j, blk["type"])
		}
	}
	flush()
	return out, nil
}

func decodeToolResult(blk map[string]any) (llm.Message, error) {
	msg := llm.Message{Role: llm.RoleTool}
	msg.ToolCallID, _ = blk["tool_use_id"].(string)
	switch c := blk["content"].(type) {
	case nil:
	case string:
		msg.Content = c
	case []any:
		var texts []string
		for _, x := range c {
			part, _ := x.(map[string]any)
			switch part["type"] {
			case "text":
				s, _ := part["text"].(string)
				texts = append(texts, s)
			case "image":
				img, err := decodeAnthropicImage(part)
				if err != nil {
					return msg, err
				}
				msg.Images = append(msg.Images, img)
			default:
				return msg, fmt.Errorf("tool_result content has unknown type %v", part["type"])
			}
		}
		msg.Content = strings.Join(texts, "\n")
	default:
		return msg, fmt.Errorf("tool_result content is %T", c)
	}
	return msg, nil
}

func decodeAnthropicImage(blk map[string]any) (llm.Image, error) {
	src, _ := blk["source"].(map[string]any)
	if src["type"] != "base64" {
		return llm.Image{}, fmt.Errorf("image source type is %v, not base64", src["type"])
	}
	mime, _ := src["media_type"].(string)
	data, _ := src["data"].(string)
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return llm.Image{}, fmt.Errorf("image data: %w", err)
	}
	return llm.Image{MIME: mime, Data: b}, nil
}

// anthropicTurn applies a forced tool_choice: a scripted text that is a
// JSON object becomes the input of the forced tool, as a model obliged to
// call it would answer.
func anthropicTurn(req *Request, turn Turn) Turn {
	name := forcedTool(req.Body)
	if name == "" || len(turn.ToolCalls) > 0 {
		return turn
	}
	args := jsonObject(turn.Text)
	if args == nil {
		return turn
	}
	turn.ToolCalls = []llm.ToolCall{{ID: "toolu_forced", Name: name, Arguments: args, RawArguments: turn.Text}}
	turn.Text = ""
	if turn.StopReason == "" {
		turn.StopReason = "tool_use"
	}
	return turn
}

func anthropicToolID(i int, tc llm.ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("toolu_%02d", i+1)
}

func anthropicStop(turn Turn) string {
	switch {
	case turn.StopReason != "":
		return turn.StopReason
	case len(turn.ToolCalls) > 0:
		return "tool_use"
	}
	return "end_turn"
}

func toolInputObject(tc llm.ToolCall) map[string]any {
	if m := jsonObject(tc.ArgumentsJSON()); m != nil {
		return m
	}
	return map[string]any{}
}

func replyAnthropic(req *Request, turn Turn) map[string]any {
	turn = anthropicTurn(req, turn)
	content := []any{}
	if turn.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": turn.Text})
	}
	for i, tc := range turn.ToolCalls {
		content = append(content, map[string]any{
			"type": "tool_use", "id": anthropicToolID(i, tc), "name": tc.Name, "input": toolInputObject(tc),
		})
	}
	return map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": turn.Model,
		"content": content, "stop_reason": anthropicStop(turn), "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": turn.Usage.InputTokens, "output_tokens": turn.Usage.OutputTokens},
	}
}

// streamAnthropic writes the Messages event stream: message_start (with
// the input tokens), one content block per text and tool call (text in
// text_delta pieces, tool input in input_json_delta fragments), pings,
// message_delta with the stop reason and output tokens, message_stop.
func streamAnthropic(sse *sseWriter, req *Request, turn Turn) {
	turn = anthropicTurn(req, turn)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": "msg_llmtest", "type": "message", "role": "assistant", "model": turn.Model,
		"content": []any{}, "stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": turn.Usage.InputTokens, "output_tokens": 1},
	}})
	if turn.Malformed {
		sse.event("content_block_start", `{"type": "content_block_start", "index": 0, "content_block": {"type": "te`)
		return
	}
	sse.event("ping", map[string]any{"type": "ping"})
	index := 0
	if turn.Text != "" {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "text", "text": ""}})
		for i, p := range pieces(turn.Text, 5) {
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "text_delta", "text": p}})
			if i == 0 {
				sse.pause()
			}
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for i, tc := range turn.ToolCalls {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": index,
			"content_block": map[string]any{"type": "tool_use", "id": anthropicToolID(i, tc), "name": tc.Name, "input": map[string]any{}}})
		b, _ := json.Marshal(toolInputObject(tc))
		args := string(b)
		for _, p := range pieces(args, max(1, (len(args)+2)/3)) {
			sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": index,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": p}})
		}
		sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	sse.event("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": anthropicStop(turn), "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": turn.Usage.OutputTokens}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

func errorAnthropic(status int, msg string) map[string]any {
	typ := "invalid_request_error"
	switch {
	case status == http.StatusUnauthorized:
		typ = "authentication_error"
	case status == http.StatusForbidden:
		typ = "permission_error"
	case status == http.StatusNotFound:
		typ = "not_found_error"
	case status == http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case status == 529:
		typ = "overloaded_error"
	case status >= 500:
		typ = "api_error"
	}
	return map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}}
}
