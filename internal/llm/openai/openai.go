// Package openai is the llm provider for the OpenAI chat completions API and
// every endpoint that speaks it: OpenAI, Ollama, vLLM, llama.cpp's server,
// LiteLLM and the like. Importing it registers the provider "openai":
//
//	import _ "github.com/skeinhq/skein/internal/llm/openai"
package openai

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"

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
	if p.cfg.NoStream {
		req.Stream, req.OnText = false, nil
	}
	params, err := p.params(req)
	if err != nil {
		return nil, err
	}
	return p.cfg.Retry.Do(ctx, llm.OpenAI, func(ctx context.Context) (*llm.Response, error) {
		if req.Stream {
			return p.stream(ctx, params, req.OnText)
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
	return response(c), nil
}

// response reads the first choice of a completion, received whole or
// accumulated from a stream.
func response(c *oai.ChatCompletion) *llm.Response {
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
	for i, tc := range ch.Message.ToolCalls {
		id := tc.ID
		if id == "" {
			id = fmt.Sprintf("call_%d", i)
		}
		resp.ToolCalls = append(resp.ToolCalls, llm.ToolCall{
			ID:           id,
			Name:         tc.Function.Name,
			Arguments:    llm.DecodeArguments(tc.Function.Arguments),
			RawArguments: tc.Function.Arguments,
		})
	}
	return resp
}

func (p *Provider) stream(ctx context.Context, params oai.ChatCompletionNewParams, onText func(string)) (*llm.Response, error) {
	var whole llm.WholeReply
	s := p.svc.NewStreaming(ctx, params, option.WithMiddleware(whole.Catch))
	defer s.Close()
	var (
		acc    oai.ChatCompletionAccumulator
		ids    callIndex
		chunks int
	)
	for s.Next() {
		chunk := s.Current()
		chunks++
		ids.normalize(&chunk)
		if !acc.AddChunk(chunk) {
			return nil, llm.Malformedf("chunk %d does not continue the stream (id %q)", chunks, chunk.ID)
		}
		if onText == nil {
			continue
		}
		for _, ch := range chunk.Choices {
			if ch.Index == 0 && ch.Delta.Content != "" {
				onText(ch.Delta.Content)
			}
		}
	}
	if err := s.Err(); err != nil {
		return nil, llm.StreamError(err)
	}
	if whole.Body != nil {
		return unstreamed(whole.Body, onText)
	}
	if chunks == 0 {
		return nil, llm.Malformedf("the stream ended without a chunk")
	}
	if len(acc.Choices) == 0 {
		return nil, llm.Malformedf("the stream has no choices")
	}
	return response(&acc.ChatCompletion), nil
}

// unstreamed reads a chat.completion a server sent whole in answer to a
// streamed request, passing its text to onText in one piece.
func unstreamed(body []byte, onText func(string)) (*llm.Response, error) {
	var c oai.ChatCompletion
	if err := json.Unmarshal(body, &c); err != nil {
		return nil, llm.Malformedf("the server answered a streamed request with JSON that is not a chat completion: %v", err)
	}
	if len(c.Choices) == 0 {
		return nil, llm.Malformedf("the server answered a streamed request with a completion that has no choices")
	}
	resp := response(&c)
	resp.Unstreamed = true
	if onText != nil && resp.Text != "" {
		onText(resp.Text)
	}
	return resp, nil
}

// callIndex gives each streamed tool call an index of its own before the
// SDK's accumulator, which joins fragments by index: some
// OpenAI-compatible servers send every call at index 0, each with its own
// id. A fragment with a new id starts a call; one without an id continues
// the last call seen at its index.
type callIndex struct {
	byID  map[string]int64
	byRaw map[int64]int64
}

func (c *callIndex) normalize(chunk *oai.ChatCompletionChunk) {
	if c.byID == nil {
		c.byID, c.byRaw = map[string]int64{}, map[int64]int64{}
	}
	for i := range chunk.Choices {
		if chunk.Choices[i].Index != 0 {
			continue
		}
		calls := chunk.Choices[i].Delta.ToolCalls
		for j := range calls {
			d := &calls[j]
			idx, ok := c.byRaw[d.Index]
			if d.ID != "" {
				if idx, ok = c.byID[d.ID]; !ok {
					idx = int64(len(c.byID))
					c.byID[d.ID] = idx
				}
			} else if !ok {
				idx = int64(len(c.byID))
				c.byID[fmt.Sprintf("call_%d", idx)] = idx
			}
			c.byRaw[d.Index] = idx
			d.Index = idx
		}
	}
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
