// Package openai is the llm provider for the OpenAI chat completions API and
// every endpoint that speaks it: OpenAI, Ollama, vLLM, llama.cpp's server,
// LiteLLM and the like. Importing it registers the provider "openai":
//
//	import _ "github.com/skeinhq/skein/internal/llm/openai"
package openai

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"slices"
	"strings"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/skeinhq/skein/internal/llm"
)

func init() {
	llm.MustRegister(llm.OpenAI, func(cfg llm.Config) (llm.Provider, error) { return New(cfg) })
}

// Provider talks to one OpenAI-compatible endpoint.
type Provider struct {
	cfg llm.Config
	svc oai.ChatCompletionService
	// vendor is true for api.openai.com, which wants max_completion_tokens
	// where other servers want max_tokens.
	vendor bool
}

var _ llm.Provider = (*Provider)(nil)

// New returns a provider for cfg. It reads no environment: llm.New has
// resolved the configuration already.
func New(cfg llm.Config) (*Provider, error) {
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithMaxRetries(0), // llm.RetryPolicy retries
		option.WithMiddleware(llm.Guard),
	}
	vendor := true
	if cfg.BaseURL != "" {
		u, err := url.Parse(cfg.BaseURL)
		if err != nil {
			return nil, fmt.Errorf("openai: base URL: %w", err)
		}
		vendor = u.Hostname() == "api.openai.com"
		opts = append(opts, option.WithBaseURL(cfg.BaseURL))
	}
	if cfg.APIKey != "" {
		opts = append(opts, option.WithAPIKey(cfg.APIKey))
	}
	for _, k := range sortedKeys(cfg.Headers) {
		opts = append(opts, option.WithHeader(k, cfg.Headers[k]))
	}
	if cfg.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(cfg.HTTPClient))
	}
	return &Provider{cfg: cfg, svc: oai.NewChatCompletionService(opts...), vendor: vendor}, nil
}

// Chat sends req and returns the reply; see llm.Provider.
func (p *Provider) Chat(ctx context.Context, req llm.Request) (*llm.Response, error) {
	if err := req.Validate(); err != nil {
		return nil, err
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	return p.cfg.Retry.Do(ctx, llm.OpenAI, func(ctx context.Context) (*llm.Response, error) {
		if req.Stream {
			return p.stream(ctx, params)
		}
		return p.complete(ctx, params)
	})
}

func (p *Provider) params(req llm.Request) (oai.ChatCompletionNewParams, error) {
	model := req.Model
	if model == "" {
		model = p.cfg.Model
	}
	if model == "" {
		return oai.ChatCompletionNewParams{}, llm.Invalidf("openai: no model: set one in the llm config or the request")
	}
	params := oai.ChatCompletionNewParams{
		Model:    shared.ChatModel(model),
		Messages: messages(req.Messages),
	}
	temp := req.Temperature
	if temp == nil {
		temp = p.cfg.Temperature
	}
	if temp != nil {
		params.Temperature = oai.Float(*temp)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = p.cfg.MaxTokens
	}
	if maxTokens > 0 {
		if p.vendor {
			params.MaxCompletionTokens = oai.Int(int64(maxTokens))
		} else {
			params.MaxTokens = oai.Int(int64(maxTokens))
		}
	}
	for _, t := range req.Tools {
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(objectSchema(t.InputSchema))}
		if t.Description != "" {
			fn.Description = oai.String(t.Description)
		}
		params.Tools = append(params.Tools, oai.ChatCompletionFunctionTool(fn))
	}
	if req.JSONSchema != nil {
		params.ResponseFormat = oai.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
				JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "response", Schema: req.JSONSchema},
			},
		}
	}
	if req.Stream {
		params.StreamOptions = oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)}
	}
	return params, nil
}

// messages converts a conversation. Images a tool returned go in a user
// message after the run of tool messages (the API allows images only from
// users, and nothing between an assistant's tool calls and their results).
func messages(in []llm.Message) []oai.ChatCompletionMessageParamUnion {
	out := make([]oai.ChatCompletionMessageParamUnion, 0, len(in))
	var toolImages []oai.ChatCompletionContentPartUnionParam
	flush := func() {
		if len(toolImages) > 0 {
			out = append(out, oai.UserMessage(toolImages))
			toolImages = nil
		}
	}
	for _, m := range in {
		if m.Role != llm.RoleTool {
			flush()
		}
		switch m.Role {
		case llm.RoleSystem:
			out = append(out, oai.SystemMessage(m.Content))
		case llm.RoleUser:
			if len(m.Images) == 0 {
				out = append(out, oai.UserMessage(m.Content))
				continue
			}
			var parts []oai.ChatCompletionContentPartUnionParam
			if m.Content != "" {
				parts = append(parts, oai.TextContentPart(m.Content))
			}
			parts = append(parts, imageParts(m.Images)...)
			out = append(out, oai.UserMessage(parts))
		case llm.RoleAssistant:
			a := oai.ChatCompletionAssistantMessageParam{}
			if m.Content != "" || len(m.ToolCalls) == 0 {
				a.Content.OfString = oai.String(m.Content)
			}
			for _, tc := range m.ToolCalls {
				a.ToolCalls = append(a.ToolCalls, oai.ChatCompletionMessageToolCallUnionParam{
					OfFunction: &oai.ChatCompletionMessageFunctionToolCallParam{
						ID:       tc.ID,
						Function: oai.ChatCompletionMessageFunctionToolCallFunctionParam{Name: tc.Name, Arguments: tc.ArgumentsJSON()},
					},
				})
			}
			out = append(out, oai.ChatCompletionMessageParamUnion{OfAssistant: &a})
		case llm.RoleTool:
			out = append(out, oai.ToolMessage(m.Content, m.ToolCallID))
			if len(m.Images) > 0 {
				toolImages = append(toolImages, oai.TextContentPart("Images returned by tool call "+m.ToolCallID+":"))
				toolImages = append(toolImages, imageParts(m.Images)...)
			}
		}
	}
	flush()
	return out
}

func imageParts(images []llm.Image) []oai.ChatCompletionContentPartUnionParam {
	parts := make([]oai.ChatCompletionContentPartUnionParam, 0, len(images))
	for _, im := range images {
		parts = append(parts, oai.ImageContentPart(oai.ChatCompletionContentPartImageImageURLParam{
			URL: "data:" + im.MIME + ";base64," + base64.StdEncoding.EncodeToString(im.Data),
		}))
	}
	return parts
}

func (p *Provider) complete(ctx context.Context, params oai.ChatCompletionNewParams) (*llm.Response, error) {
	c, err := p.svc.New(ctx, params)
	if err != nil {
		return nil, err
	}
	if len(c.Choices) == 0 {
		return nil, llm.Malformedf("the completion has no choices")
	}
	ch := c.Choices[0]
	resp := &llm.Response{
		Text:       ch.Message.Content,
		Model:      c.Model,
		StopReason: stopReason(ch.FinishReason),
		Usage:      usage(c.Usage),
	}
	if resp.Text == "" && ch.Message.Refusal != "" {
		resp.Text = ch.Message.Refusal
		resp.StopReason = llm.StopContentFilter
	}
	for _, tc := range ch.Message.ToolCalls {
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{
			ID:           tc.ID,
			Name:         tc.Function.Name,
			Arguments:    llm.DecodeArguments(tc.Function.Arguments),
			RawArguments: tc.Function.Arguments,
		})
	}
	return resp, nil
}

func (p *Provider) stream(ctx context.Context, params oai.ChatCompletionNewParams) (*llm.Response, error) {
	s := p.svc.NewStreaming(ctx, params)
	defer s.Close()
	var (
		text, refusal strings.Builder
		calls         toolCalls
		resp          = &llm.Response{}
		chunks        int
	)
	for s.Next() {
		chunk := s.Current()
		chunks++
		if chunk.Model != "" {
			resp.Model = chunk.Model
		}
		if u := usage(chunk.Usage); u.TotalTokens > 0 {
			resp.Usage = u
		}
		for _, ch := range chunk.Choices {
			if ch.Index != 0 {
				continue
			}
			text.WriteString(ch.Delta.Content)
			refusal.WriteString(ch.Delta.Refusal)
			for _, d := range ch.Delta.ToolCalls {
				calls.add(d.Index, d.ID, d.Function.Name, d.Function.Arguments)
			}
			if ch.FinishReason != "" {
				resp.StopReason = stopReason(ch.FinishReason)
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, llm.StreamError(err)
	}
	if chunks == 0 {
		return nil, llm.Malformedf("the stream ended without a chunk")
	}
	resp.Text = text.String()
	if resp.Text == "" && refusal.Len() > 0 {
		resp.Text = refusal.String()
		resp.StopReason = llm.StopContentFilter
	}
	resp.ToolCalls = calls.list()
	return resp, nil
}

// toolCalls collects streamed tool calls. A delta names its call by index
// and, in its first fragment, by id. Calls are told apart by id first: some
// OpenAI-compatible servers send every call at index 0, each with its own
// id; a fragment without an id continues the last call seen at its index.
type toolCalls struct {
	calls   []*callBuilder
	byIndex map[int64]*callBuilder
	byID    map[string]*callBuilder
}

type callBuilder struct {
	id, name string
	args     strings.Builder
}

func (c *toolCalls) add(index int64, id, name, args string) {
	if c.byIndex == nil {
		c.byIndex = map[int64]*callBuilder{}
		c.byID = map[string]*callBuilder{}
	}
	var b *callBuilder
	if id != "" {
		b = c.byID[id]
		if b == nil {
			b = &callBuilder{id: id}
			c.byID[id] = b
			c.calls = append(c.calls, b)
		}
		c.byIndex[index] = b
	} else {
		b = c.byIndex[index]
		if b == nil {
			b = &callBuilder{}
			c.byIndex[index] = b
			c.calls = append(c.calls, b)
		}
	}
	if b.name == "" {
		b.name = name
	}
	b.args.WriteString(args)
}

func (c *toolCalls) list() []llm.ToolCall {
	var out []llm.ToolCall
	for i, b := range c.calls {
		id := b.id
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		raw := b.args.String()
		out = append(out, llm.ToolCall{ID: id, Name: b.name, Arguments: llm.DecodeArguments(raw), RawArguments: raw})
	}
	return out
}

func usage(u oai.CompletionUsage) llm.Usage {
	out := llm.Usage{
		InputTokens:  int(u.PromptTokens),
		OutputTokens: int(u.CompletionTokens),
		TotalTokens:  int(u.TotalTokens),
	}
	if out.TotalTokens == 0 {
		out.TotalTokens = out.InputTokens + out.OutputTokens
	}
	return out
}

func stopReason(r string) string {
	switch r {
	case "stop":
		return llm.StopEnd
	case "tool_calls", "function_call":
		return llm.StopToolCalls
	case "length":
		return llm.StopLength
	case "content_filter":
		return llm.StopContentFilter
	}
	return r
}

// objectSchema is the tool's input schema, or an empty object schema.
func objectSchema(s map[string]any) map[string]any {
	if s == nil {
		return map[string]any{"type": "object", "properties": map[string]any{}}
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
