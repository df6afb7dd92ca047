package llmtest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/skeinhq/skein/internal/llm"
)

// decodeOpenAI reads a chat completions request back into llm types.
func decodeOpenAI(r *Request) error {
	b := r.Body
	r.Model, _ = b["model"].(string)
	r.Stream, _ = b["stream"].(bool)
	if so, ok := b["stream_options"].(map[string]any); ok {
		r.IncludeUsage, _ = so["include_usage"].(bool)
	}
	if t, ok := b["temperature"].(float64); ok {
		r.Temperature = &t
	}
	if n, ok := b["max_completion_tokens"].(float64); ok {
		r.MaxTokens = int(n)
	} else if n, ok := b["max_tokens"].(float64); ok {
		r.MaxTokens = int(n)
	}
	msgs, ok := b["messages"].([]any)
	if !ok {
		return fmt.Errorf("messages is not a list")
	}
	for i, x := range msgs {
		m, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("message %d is not an object", i)
		}
		msg, err := decodeOpenAIMessage(m)
		if err != nil {
			return fmt.Errorf("message %d: %w", i, err)
		}
		r.Messages = append(r.Messages, msg)
	}
	if tools, ok := b["tools"].([]any); ok {
		for i, x := range tools {
			t, _ := x.(map[string]any)
			fn, ok := t["function"].(map[string]any)
			if t["type"] != "function" || !ok {
				return fmt.Errorf("tool %d is not {type: function, function: …}", i)
			}
			tool := llm.Tool{}
			tool.Name, _ = fn["name"].(string)
			tool.Description, _ = fn["description"].(string)
			tool.InputSchema, _ = fn["parameters"].(map[string]any)
			r.Tools = append(r.Tools, tool)
		}
	}
	if rf, ok := b["response_format"].(map[string]any); ok && rf["type"] == "json_schema" {
		js, _ := rf["json_schema"].(map[string]any)
		r.Schema, _ = js["schema"].(map[string]any)
		if r.Schema == nil {
			return fmt.Errorf("response_format json_schema without a schema")
		}
	}
	return nil
}

func decodeOpenAIMessage(m map[string]any) (llm.Message, error) {
	var msg llm.Message
	msg.Role, _ = m["role"].(string)
	msg.ToolCallID, _ = m["tool_call_id"].(string)
	switch c := m["content"].(type) {
	case nil:
	case string:
		msg.Content = c
	case []any:
		var texts []string
		for j, x := range c {
			part, _ := x.(map[string]any)
			switch part["type"] {
			case "text":
				s, _ := part["text"].(string)
				texts = append(texts, s)
			case "image_url":
				iu, _ := part["image_url"].(map[string]any)
				url, _ := iu["url"].(string)
				img, err := decodeDataURL(url)
				if err != nil {
					return msg, fmt.Errorf("part %d: %w", j, err)
				}
				msg.Images = append(msg.Images, img)
			default:
				return msg, fmt.Errorf("part %d has unknown type %v", j, part["type"])
			}
		}
		msg.Content = strings.Join(texts, "\n")
	default:
		return msg, fmt.Errorf("content is %T", c)
	}
	if tcs, ok := m["tool_calls"].([]any); ok {
		for j, x := range tcs {
			tc, _ := x.(map[string]any)
			fn, _ := tc["function"].(map[string]any)
			if tc["type"] != "function" || fn == nil {
				return msg, fmt.Errorf("tool call %d is not {type: function, function: …}", j)
			}
			call := llm.ToolCall{}
			call.ID, _ = tc["id"].(string)
			call.Name, _ = fn["name"].(string)
			call.RawArguments, _ = fn["arguments"].(string)
			call.Arguments = llm.DecodeArguments(call.RawArguments)
			msg.ToolCalls = append(msg.ToolCalls, call)
		}
	}
	return msg, nil
}

func decodeDataURL(url string) (llm.Image, error) {
	rest, ok := strings.CutPrefix(url, "data:")
	if !ok {
		return llm.Image{}, fmt.Errorf("image url is not a data: URL")
	}
	mime, data, ok := strings.Cut(rest, ";base64,")
	if !ok {
		return llm.Image{}, fmt.Errorf("image data URL is not base64")
	}
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return llm.Image{}, fmt.Errorf("image data: %w", err)
	}
	return llm.Image{MIME: mime, Data: b}, nil
}

func openAIToolCallID(i int, tc llm.ToolCall) string {
	if tc.ID != "" {
		return tc.ID
	}
	return fmt.Sprintf("call_%d", i+1)
}

func openAIFinish(turn Turn) string {
	switch {
	case turn.StopReason != "":
		return turn.StopReason
	case len(turn.ToolCalls) > 0:
		return "tool_calls"
	}
	return "stop"
}

func openAIUsage(u llm.Usage) map[string]any {
	return map[string]any{"prompt_tokens": u.InputTokens, "completion_tokens": u.OutputTokens, "total_tokens": u.TotalTokens}
}

func replyOpenAI(turn Turn) map[string]any {
	msg := map[string]any{"role": "assistant", "content": nil}
	if turn.Text != "" {
		msg["content"] = turn.Text
	}
	if len(turn.ToolCalls) > 0 {
		var calls []any
		for i, tc := range turn.ToolCalls {
			calls = append(calls, map[string]any{
				"id":       openAIToolCallID(i, tc),
				"type":     "function",
				"function": map[string]any{"name": tc.Name, "arguments": tc.ArgumentsJSON()},
			})
		}
		msg["tool_calls"] = calls
	}
	return map[string]any{
		"id":      "chatcmpl-llmtest",
		"object":  "chat.completion",
		"created": 1700000000,
		"model":   turn.Model,
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": openAIFinish(turn), "logprobs": nil}},
		"usage":   openAIUsage(turn.Usage),
	}
}

// streamOpenAI writes chat.completion.chunk events: the role, the text in
// pieces, each tool call's id and name then its arguments in fragments
// interleaved across calls (so a client must collect them by index), the
// finish reason, the usage when stream_options asked for it, and [DONE].
func streamOpenAI(sse *sseWriter, req *Request, turn Turn) {
	chunk := func(choices []any) map[string]any {
		return map[string]any{
			"id": "chatcmpl-llmtest", "object": "chat.completion.chunk", "created": 1700000000,
			"model": turn.Model, "choices": choices,
		}
	}
	delta := func(d map[string]any, finish any) []any {
		return []any{map[string]any{"index": 0, "delta": d, "finish_reason": finish, "logprobs": nil}}
	}
	sse.event("", chunk(delta(map[string]any{"role": "assistant", "content": ""}, nil)))
	if turn.Malformed {
		sse.event("", `{"id": "chatcmpl-llmtest", "choices": [{"delta": {"content": "oops`)
		sse.event("", "[DONE]")
		return
	}
	for i, p := range pieces(turn.Text, 5) {
		sse.event("", chunk(delta(map[string]any{"content": p}, nil)))
		if i == 0 {
			sse.pause()
		}
	}
	frags := make([][]string, len(turn.ToolCalls))
	for i, tc := range turn.ToolCalls {
		args := tc.ArgumentsJSON()
		frags[i] = pieces(args, max(1, (len(args)+2)/3))
		sse.event("", chunk(delta(map[string]any{"tool_calls": []any{map[string]any{
			"index": i, "id": openAIToolCallID(i, tc), "type": "function",
			"function": map[string]any{"name": tc.Name, "arguments": ""},
		}}}, nil)))
	}
	for more := true; more; {
		more = false
		for i := range frags {
			if len(frags[i]) == 0 {
				continue
			}
			more = true
			sse.event("", chunk(delta(map[string]any{"tool_calls": []any{map[string]any{
				"index": i, "function": map[string]any{"arguments": frags[i][0]},
			}}}, nil)))
			frags[i] = frags[i][1:]
		}
	}
	sse.event("", chunk(delta(map[string]any{}, openAIFinish(turn))))
	if req.IncludeUsage {
		u := chunk([]any{})
		u["usage"] = openAIUsage(turn.Usage)
		sse.event("", u)
	}
	sse.event("", "[DONE]")
}

func errorOpenAI(status int, msg string) map[string]any {
	typ, code := "invalid_request_error", any(nil)
	switch {
	case status == http.StatusUnauthorized:
		code = "invalid_api_key"
	case status == http.StatusForbidden:
		code = "unsupported_country_region_territory"
	case status == http.StatusTooManyRequests:
		typ, code = "requests", "rate_limit_exceeded"
	case status >= 500:
		typ = "server_error"
	}
	return map[string]any{"error": map[string]any{"message": msg, "type": typ, "param": nil, "code": code}}
}

// jsonObject decodes s as a JSON object, or returns nil.
func jsonObject(s string) map[string]any {
	var m map[string]any
	if json.Unmarshal([]byte(s), &m) != nil {
		return nil
	}
	return m
}
