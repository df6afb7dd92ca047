package llm

import (
	"context"
	"encoding/json"

	"github.com/skeinhq/skein/node"
)

// Provider is one model endpoint. Chat sends a conversation and returns the
// model's reply: its text, the tools it wants called, and the tokens it
// used. Errors are *node.Error values in the categories declared in this
// package; retries on rate limits and server errors have already happened.
type Provider interface {
	Chat(ctx context.Context, req Request) (*Response, error)
}

// Roles of a message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one turn of a conversation.
type Message struct {
	// Role is system, user, assistant or tool.
	Role    string `json:"role"`
	Content string `json:"content,omitempty"`
	// Images go with a user message (or a tool result) to a vision model.
	Images []Image `json:"images,omitempty"`
	// ToolCalls are the calls an assistant message asked for.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// ToolCallID names the call a tool message answers.
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Image is an image sent inline.
type Image struct {
	// MIME is the media type: image/png, image/jpeg, image/gif or image/webp.
	MIME string `json:"mime"`
	Data []byte `json:"data"`
}

// Tool is a function the model may ask to call.
type Tool struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments (an object schema).
	InputSchema map[string]any `json:"input_schema,omitempty"`
}

// ToolCall is the model asking for one tool call.
type ToolCall struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Arguments are RawArguments decoded; nil when the model wrote
	// arguments that are not a JSON object (RawArguments keeps them, so the
	// caller can tell the model).
	Arguments map[string]any `json:"arguments,omitempty"`
	// RawArguments is the arguments as the model wrote them. When sending a
	// call back in a conversation it wins over Arguments if set.
	RawArguments string `json:"raw_arguments,omitempty"`
}

// Request is one call to a model.
type Request struct {
	// Model overrides the provider's configured model.
	Model    string
	Messages []Message
	Tools    []Tool
	// Temperature and MaxTokens override the provider's configuration.
	Temperature *float64
	MaxTokens   int
	// JSONSchema asks for a reply that is JSON matching this schema: the
	// reply's Text is then that JSON. OpenAI gets a json_schema
	// response_format; Anthropic a tool it must call (see ChatJSON for
	// parsing and validation).
	JSONSchema map[string]any
	// Stream asks for the reply as a stream of events; Chat consumes it and
	// returns the same Response as without streaming.
	Stream bool
	// OnText, when set on a streamed request, is called with each piece of
	// the reply's text as it arrives, from the goroutine that called Chat.
	// A retried attempt streams its text again from the start, and the
	// pieces of a JSON reply that Anthropic gives as a tool's input never
	// come here.
	OnText func(piece string)
}

// Usage counts tokens.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	TotalTokens  int `json:"total_tokens"`
}

// Add returns the sum of two usages.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		InputTokens:  u.InputTokens + v.InputTokens,
		OutputTokens: u.OutputTokens + v.OutputTokens,
		TotalTokens:  u.TotalTokens + v.TotalTokens,
	}
}

// Stop reasons, normalised across providers. A provider's reason with no
// equivalent is passed on as it is.
const (
	StopEnd           = "stop"
	StopToolCalls     = "tool_calls"
	StopLength        = "length"
	StopContentFilter = "content_filter"
)

// Response is a model's reply.
type Response struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	Usage     Usage      `json:"usage"`
	// Model is the model that answered, as the endpoint names it.
	Model      string `json:"model"`
	StopReason string `json:"stop_reason"`
	// Unstreamed is set when the request asked for a stream and the server
	// answered with the whole reply as one JSON body instead (a server that
	// ignores stream): the reply is complete, but its text arrived in one
	// piece, at the end.
	Unstreamed bool `json:"-"`
}

// System returns a system message.
func System(text string) Message { return Message{Role: RoleSystem, Content: text} }

// User returns a user message, with optional images.
func User(text string, images ...Image) Message {
	return Message{Role: RoleUser, Content: text, Images: images}
}

// Assistant returns an assistant message: the reply resp, ready to be sent
// back with the results of its tool calls.
func Assistant(resp *Response) Message {
	return Message{Role: RoleAssistant, Content: resp.Text, ToolCalls: resp.ToolCalls}
}

// ToolResult returns the message that answers the tool call id.
func ToolResult(id, content string, images ...Image) Message {
	return Message{Role: RoleTool, ToolCallID: id, Content: content, Images: images}
}

// Validate reports a request that no provider could send.
func (r *Request) Validate() error {
	if len(r.Messages) == 0 {
		return Invalidf("request has no messages")
	}
	for i, m := range r.Messages {
		switch m.Role {
		case RoleSystem, RoleUser, RoleAssistant:
		case RoleTool:
			if m.ToolCallID == "" {
				return Invalidf("message %d: a tool message needs tool_call_id", i)
			}
		default:
			return Invalidf("message %d: unknown role %q (want system, user, assistant or tool)", i, m.Role)
		}
		for j, tc := range m.ToolCalls {
			if tc.ID == "" || tc.Name == "" {
				return Invalidf("message %d: tool call %d needs an id and a name", i, j)
			}
		}
		for j, im := range m.Images {
			if im.MIME == "" || len(im.Data) == 0 {
				return Invalidf("message %d: image %d needs a MIME type and data", i, j)
			}
		}
	}
	for i, t := range r.Tools {
		if t.Name == "" {
			return Invalidf("tool %d has no name", i)
		}
	}
	return nil
}

// ArgumentsJSON returns the call's arguments as a JSON object: RawArguments
// when set, else Arguments encoded ("{}" when there are none).
func (c ToolCall) ArgumentsJSON() string {
	if c.RawArguments != "" {
		return c.RawArguments
	}
	if c.Arguments == nil {
		return "{}"
	}
	b, err := json.Marshal(c.Arguments)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// DecodeArguments decodes a tool call's raw arguments: an empty string is
// no arguments; anything that is not a JSON object yields nil.
func DecodeArguments(raw string) map[string]any {
	if raw == "" {
		return map[string]any{}
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(raw), &m); err != nil || m == nil {
		return nil
	}
	return m
}

// Invalidf returns a permanent error in the validation category: a request
// or configuration that cannot work.
func Invalidf(format string, args ...any) *node.Error {
	e := failf(categoryValidation, format, args...)
	e.Permanent = true
	return e
}
