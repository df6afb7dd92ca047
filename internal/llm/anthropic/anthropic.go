// Package anthropic is the llm provider for Anthropic's Messages API.
// Importing it registers the provider "anthropic":
//
//	import _ "github.com/skeinhq/skein/internal/llm/anthropic"
//
// A request with a JSON schema becomes a tool the model must call (named
// StructuredTool) whose input is the answer; the reply's Text is that
// input.
package anthropic

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"time"

	sdk "github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/skeinhq/skein/internal/llm"
)

func init() {
	llm.MustRegister(llm.Anthropic, func(cfg llm.Config) (llm.Provider, error) { return New(cfg) })
}

// StructuredTool is the name of the tool a JSON-schema request forces.
const StructuredTool = "structured_output"

// nonStreamingTimeout bounds one non-streaming attempt. Setting it also
// stops the SDK from refusing large max_tokens without streaming; the
// caller's context still rules.
const nonStreamingTimeout = 10 * time.Minute

// Provider talks to one Anthropic Messages endpoint.
type Provider struct {
	cfg llm.Config
	svc sdk.MessageService
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for cfg. It reads no environment (the SDK's
// credential chain is bypassed): llm.New has resolved the configuration.
func New(cfg llm.Config) (*Provider, error) {
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithMaxRetries(0), // llm.RetryPolicy retries
		option.WithMiddleware(llm.Guard),
	}
	if cfg.BaseURL != "" {
		// The SDK's paths start with v1/; accept a base URL that has it.
		base := strings.TrimSuffix(strings.TrimRight(cfg.BaseURL, "/"), "/v1")
		opts = append(opts, option.WithBaseURL(base+"/"))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	keys := make([]string, 0, len(cfg.Headers))
	for k := range cfg.Headers {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{cfg: cfg, svc: sdk.NewMessageService(opts...)}, nil
}

// Chat sends req and returns the reply; see llm.Provider.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	if p.cfg.NoStream {
		req.Stream, req.OnText = false, nil
	}
	params, js, err := p.params(req)
	if err != nil {
		return nil, err
	}
	return p.cfg.Retry.Do(ctx, llm.Anthropic, func(ctx context.Context) (*llm.Response, error) {
		var resp *llm.Response
		var err error
		if req.Stream {
			onText := req.OnText
			if js != nil {
				onText = nil // the answer is the structured tool's input, not text
			}
			resp, err = p.stream(ctx, params, onText)
		} else {
			resp, err = p.complete(ctx, params)
		}
		if err != nil {
			return nil, err
		}
		if js != nil {
			js.extract(resp)
		}
		return resp, nil
	})
}

// jsonMode remembers how a schema was turned into a tool.
type jsonMode struct {
	// wrapped: the schema is not an object schema, so the tool's input is
	// {"value": …}.
	wrapped bool
}

// extract moves the structured tool's input into the reply's text.
func (j *jsonMode) extract(resp *llm.Response) {
	i := slices.IndexFunc(resp.ToolCalls, func(tc llm.ToolCall) bool { return tc.Name == StructuredTool })
	if i < 0 {
		return
	}
	tc := resp.ToolCalls[i]
	text := tc.RawArguments
	if j.wrapped {
		var v struct {
			Value json.RawMessage `json:"value"`
		}
		if json.Unmarshal([]byte(text), &v) == nil && v.Value != nil {
			text = string(v.Value)
		}
	}
	// Prose before the tool call is not part of the answer.
	resp.Text = text
	resp.ToolCalls = slices.Delete(resp.ToolCalls, i, i+1)
	if len(resp.ToolCalls) == 0 {
		resp.ToolCalls = nil
		resp.StopReason = llm.StopEnd
	}
}

func (p *Provider) params(req llm.Request) (sdk.MessageNewParams, *jsonMode, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	if model == "" {
		return sdk.MessageNewParams{}, nil, llm.Invalidf("anthropic: no model: set one in the llm config or the request")
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = llm.DefaultMaxTokens
	}
	msgs, system, err := messages(req.Messages)
	if err != nil {
		return sdk.MessageNewParams{}, nil, err
	}
	params := sdk.MessageNewParams{
		Model:     sdk.Model(model),
		MaxTokens: int64(maxTokens),
		Messages:  msgs,
		System:    system,
	}
	temp := req.Temperature
	if temp == nil {
		temp = p.cfg.Temperature
	}
	if temp != nil {
		params.Temperature = sdk.Float(*temp)
	}
	for _, t := range req.Tools {
		if t.Name == StructuredTool && req.JSONSchema != nil {
			return sdk.MessageNewParams{}, nil, llm.Invalidf("anthropic: tool name %q is reserved for JSON replies", StructuredTool)
		}
		params.Tools = append(params.Tools, tool(t.Name, t.Description, t.InputSchema))
	}
	var js *jsonMode
	if req.JSONSchema != nil {
		js = &jsonMode{}
		schema := req.JSONSchema
		if schema["type"] != "object" {
			js.wrapped = true
			schema = map[string]any{
				"type":       "object",
				"properties": map[string]any{"value": schema},
				"required":   []string{"value"},
			}
		}
		params.Tools = append(params.Tools, tool(StructuredTool, "Give your final answer: its input is the answer, in the required JSON form.", schema))
		if len(req.Tools) == 0 {
			params.ToolChoice = sdk.ToolChoiceUnionParam{OfTool: &sdk.ToolChoiceToolParam{Name: StructuredTool}}
		} else {
			params.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
			params.System = append(params.System, sdk.TextBlockParam{
				Text: "When you have the final answer, call the " + StructuredTool + " tool with it.",
			})
		}
	}
	return params, js, nil
}

func tool(name, description string, schema map[string]any) sdk.ToolUnionParam {
	t := sdk.ToolParam{Name: name, InputSchema: inputSchema(schema)}
	if description != "" {
		t.Description = sdk.String(description)
	}
	return sdk.ToolUnionParam{OfTool: &t}
}

// inputSchema splits a JSON Schema into the SDK's fields; keywords it has
// no field for travel as extra fields.
func inputSchema(s map[string]any) sdk.ToolInputSchemaParam {
	var out sdk.ToolInputSchemaParam
	if s == nil {
		out.Properties = map[string]any{}
		return out
	}
	for k, v := range s {
		switch k {
		case "type":
		case "properties":
			out.Properties = v
		case "required":
			out.Required = stringList(v)
		default:
			if out.ExtraFields == nil {
				out.ExtraFields = map[string]any{}
			}
			out.ExtraFields[k] = v
		}
	}
	if out.Properties == nil {
		// An empty input schema would be left out of the request, which
		// the API refuses: {"type": "object"} alone is a tool without
		// arguments.
		out.Properties = map[string]any{}
	}
	return out
}

func stringList(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

// messages converts a conversation: system messages go to the system
// prompt, tool results into user turns, and consecutive turns of one role
// merge (the API wants the results of parallel calls in one user turn).
func messages(in []llm.Message) ([]sdk.MessageParam, []sdk.TextBlockParam, error) {
	var (
		out    []sdk.MessageParam
		system []sdk.TextBlockParam
	)
	add := func(role sdk.MessageParamRole, blocks []sdk.ContentBlockParamUnion) {
		if n := len(out); n > 0 && out[n-1].Role == role {
			out[n-1].Content = append(out[n-1].Content, blocks...)
			return
		}
		out = append(out, sdk.MessageParam{Role: role, Content: blocks})
	}
	for i, m := range in {
		switch m.Role {
		case llm.RoleSystem:
			if m.Content != "" {
				system = append(system, sdk.TextBlockParam{Text: m.Content})
			}
		case llm.RoleUser:
			var blocks []sdk.ContentBlockParamUnion
			for _, im := range m.Images {
				blocks = append(blocks, sdk.NewImageBlockBase64(im.MIME, base64.StdEncoding.EncodeToString(im.Data)))
			}
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			if len(blocks) == 0 {
				return nil, nil, llm.Invalidf("message %d: a user message needs content or images", i)
			}
			add(sdk.MessageParamRoleUser, blocks)
		case llm.RoleAssistant:
			var blocks []sdk.ContentBlockParamUnion
			if m.Content != "" {
				blocks = append(blocks, sdk.NewTextBlock(m.Content))
			}
			for _, tc := range m.ToolCalls {
				blocks = append(blocks, sdk.NewToolUseBlock(tc.ID, toolInput(tc), tc.Name))
			}
			if len(blocks) == 0 {
				return nil, nil, llm.Invalidf("message %d: an assistant message needs content or tool calls", i)
			}
			add(sdk.MessageParamRoleAssistant, blocks)
		case llm.RoleTool:
			res := sdk.ToolResultBlockParam{ToolUseID: m.ToolCallID}
			if m.Content != "" {
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfText: &sdk.TextBlockParam{Text: m.Content}})
			}
			for _, im := range m.Images {
				img := sdk.NewImageBlockBase64(im.MIME, base64.StdEncoding.EncodeToString(im.Data))
				res.Content = append(res.Content, sdk.ToolResultBlockParamContentUnion{OfImage: img.OfImage})
			}
			add(sdk.MessageParamRoleUser, []sdk.ContentBlockParamUnion{{OfToolResult: &res}})
		}
	}
	return out, system, nil
}

// toolInput is a call's arguments as an object for a tool_use block.
func toolInput(tc llm.ToolCall) any {
	if tc.RawArguments != "" {
		if m := llm.DecodeArguments(tc.RawArguments); m != nil {
			return m
		}
	}
	if tc.Arguments != nil {
		return tc.Arguments
	}
	return map[string]any{}
}

func (p *Provider) complete(ctx context.Context, params sdk.MessageNewParams) (*llm.Response, error) {
	msg, err := p.svc.New(ctx, params, option.WithRequestTimeout(nonStreamingTimeout))
	if err != nil {
		return nil, err
	}
	if msg.Type != "" && msg.Type != "message" {
		return nil, llm.Malformedf("the reply is a %q, not a message", msg.Type)
	}
	return response(msg), nil
}

// response reads a message, received whole or accumulated from a stream.
func response(msg *sdk.Message) *llm.Response {
	resp := &llm.Response{
		Model:      string(msg.Model),
		StopReason: stopReason(string(msg.StopReason)),
		Usage:      usage(msg.Usage.InputTokens+msg.Usage.CacheCreationInputTokens+msg.Usage.CacheReadInputTokens, msg.Usage.OutputTokens),
	}
	var text strings.Builder
	for _, b := range msg.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			raw := string(b.Input)
			if raw == "" {
				raw = "{}"
			}
			resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: llm.DecodeArguments(raw), RawArguments: raw})
		}
	}
	resp.Text = text.String()
	return resp
}

// stream reads the reply's events into the SDK's accumulator, passing
// each piece of text to onText (when set) as it comes.
func (p *Provider) stream(ctx context.Context, params sdk.MessageNewParams, onText func(string)) (*llm.Response, error) {
	var whole llm.WholeReply
	s := p.svc.NewStreaming(ctx, params, option.WithMiddleware(whole.Catch))
	defer s.Close()
	var (
		msg              sdk.Message
		started, stopped bool
	)
	for s.Next() {
		ev := s.Current()
		switch ev.Type {
		case "message_start":
			started = true
		case "message_stop":
			stopped = true
		}
		if !started {
			return nil, llm.Malformedf("the stream sent %s before message_start", ev.Type)
		}
		if err := msg.Accumulate(ev); err != nil {
			return nil, llm.Malformedf("%v", err)
		}
		if onText != nil && ev.Type == "content_block_delta" && ev.Delta.Type == "text_delta" && ev.Delta.Text != "" {
			onText(ev.Delta.Text)
		}
	}
	if err := s.Err(); err != nil {
		return nil, llm.StreamError(err)
	}
	if whole.Body != nil {
		return unstreamed(whole.Body, onText)
	}
	if !started {
		return nil, llm.Malformedf("the stream ended without message_start")
	}
	if !stopped {
		return nil, errors.New("the stream ended before message_stop")
	}
	return response(&msg), nil
}

// unstreamed reads a message a server sent whole in answer to a streamed
// request, passing its text to onText in one piece.
func unstreamed(body []byte, onText func(string)) (*llm.Response, error) {
	var msg sdk.Message
	if err := json.Unmarshal(body, &msg); err != nil {
		return nil, llm.Malformedf("the server answered a streamed request with JSON that is not a message: %v", err)
	}
	if msg.Type != "" && msg.Type != "message" {
		return nil, llm.Malformedf("the server answered a streamed request with a %q, not a message", msg.Type)
	}
	resp := response(&msg)
	resp.Unstreamed = true
	if onText != nil && resp.Text != "" {
		onText(resp.Text)
	}
	return resp, nil
}

func usage(in, out int64) llm.Usage {
	return llm.Usage{InputTokens: int(in), OutputTokens: int(out), TotalTokens: int(in + out)}
}

func stopReason(r string) string {
	switch r {
	case "end_turn", "stop_sequence":
		return llm.StopEnd
	case "tool_use":
		return llm.StopToolCalls
	case "max_tokens", "model_context_window_exceeded":
		return llm.StopLength
	case "refusal":
		return llm.StopContentFilter
	}
	return r
}
