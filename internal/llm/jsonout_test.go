package llm

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
)

// fakeProvider answers from a list of replies and records the requests.
type fakeProvider struct {
	replies []*Response
	errs    []error
	reqs    []Request
}

func (f *fakeProvider) Chat(_ context.Context, req Request) (*Response, error) {
	f.reqs = append(f.reqs, req)
	i := len(f.reqs) - 1
	if i < len(f.errs) && f.errs[i] != nil {
		return nil, f.errs[i]
	}
	if i >= len(f.replies) {
		return nil, errors.New("fakeProvider: no more replies")
	}
	return f.replies[i], nil
}

var citySchema = map[string]any{
	"type":                 "object",
	"properties":           map[string]any{"city": map[string]any{"type": "string"}, "days": map[string]any{"type": "integer"}},
	"required":             []string{"city"}, // as a Go literal, not JSON: CompileSchema copes
	"additionalProperties": false,
}

func reply(text string, in, out int) *Response {
	return &Response{Text: text, Usage: Usage{InputTokens: in, OutputTokens: out, TotalTokens: in + out}}
}

func TestSchemaParse(t *testing.T) {
	t.Parallel()
	sch, err := CompileSchema(citySchema)
	require.NoError(t, err)
	tests := []struct {
		name    string
		text    string
		want    any
		wantErr string
	}{
		{name: "plain", text: `{"city":"Paris","days":3}`, want: map[string]any{"city": "Paris", "days": float64(3)}},
		{name: "blank space", text: "\n  {\"city\":\"Oslo\"}\n", want: map[string]any{"city": "Oslo"}},
		{name: "fenced", text: "```json\n{\"city\":\"Rome\"}\n```", want: map[string]any{"city": "Rome"}},
		{name: "bare fence", text: "```\n{\"city\":\"Rome\"}\n```", want: map[string]any{"city": "Rome"}},
		{name: "empty", text: "  ", wantErr: "empty"},
		{name: "prose", text: "Sure! Paris.", wantErr: "not JSON"},
		{name: "wrong type", text: `{"city": 1}`, wantErr: "at '/city': got number, want string"},
		{name: "missing", text: `{"days": 1}`, wantErr: "at '/': missing property 'city'"},
		{name: "extra", text: `{"city": "x", "mood": "ok"}`, wantErr: "at '/': property not allowed: 'mood'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := sch.Parse(tt.text)
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr)
				require.NotContains(t, err.Error(), "schema.skein.invalid", "no internal URL in messages")
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got)
		})
	}
}

func TestCompileSchemaErrors(t *testing.T) {
	t.Parallel()
	_, err := CompileSchema(nil)
	require.ErrorContains(t, err, "no JSON schema")
	_, err = CompileSchema(map[string]any{"type": "no-such-type"})
	var e *node.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, node.CategoryValidation, e.Category)
}

func TestChatJSON(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	req := Request{Messages: []Message{User("Paris please")}}

	t.Run("first reply valid", func(t *testing.T) {
		t.Parallel()
		p := &fakeProvider{replies: []*Response{reply(`{"city":"Paris"}`, 5, 3)}}
		v, resp, err := ChatJSON(ctx, p, req, citySchema)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"city": "Paris"}, v)
		require.Equal(t, 8, resp.Usage.TotalTokens)
		require.Len(t, p.reqs, 1)
		require.Equal(t, citySchema, p.reqs[0].JSONSchema, "the schema is asked for")
	})

	t.Run("one re-ask", func(t *testing.T) {
		t.Parallel()
		p := &fakeProvider{replies: []*Response{reply(`{"town":"Paris"}`, 5, 3), reply(`{"city":"Paris"}`, 9, 3)}}
		v, resp, err := ChatJSON(ctx, p, req, citySchema)
		require.NoError(t, err)
		require.Equal(t, map[string]any{"city": "Paris"}, v)
		require.Equal(t, Usage{InputTokens: 14, OutputTokens: 6, TotalTokens: 20}, resp.Usage)
		require.Len(t, p.reqs, 2)
		second := p.reqs[1].Messages
		require.Len(t, second, 3)
		require.Equal(t, Message{Role: RoleAssistant, Content: `{"town":"Paris"}`}, second[1])
		require.Equal(t, RoleUser, second[2].Role)
		require.Contains(t, second[2].Content, "missing property 'city'")
		require.Len(t, req.Messages, 1, "the caller's messages are left alone")
	})

	t.Run("fails after the re-ask", func(t *testing.T) {
		t.Parallel()
		p := &fakeProvider{replies: []*Response{reply(`nope`, 5, 3), reply(`still nope`, 9, 3)}}
		_, resp, err := ChatJSON(ctx, p, req, citySchema)
		var e *node.Error
		require.ErrorAs(t, err, &e)
		require.Equal(t, CategoryMalformed, e.Category)
		require.Contains(t, e.Message, "after a re-ask")
		require.Equal(t, "still nope", e.Details["reply"])
		require.Equal(t, 20, resp.Usage.TotalTokens, "usage is still reported")
		require.Len(t, p.reqs, 2)
	})

	t.Run("provider errors pass through", func(t *testing.T) {
		t.Parallel()
		boom := Classify("test", status(401, ""))
		p := &fakeProvider{errs: []error{boom}}
		_, _, err := ChatJSON(ctx, p, req, citySchema)
		require.Same(t, boom, err)
	})

	t.Run("no tools", func(t *testing.T) {
		t.Parallel()
		p := &fakeProvider{}
		_, _, err := ChatJSON(ctx, p, Request{Messages: req.Messages, Tools: []Tool{{Name: "x"}}}, citySchema)
		require.ErrorContains(t, err, "offers tools")
		require.Empty(t, p.reqs)
	})

	t.Run("bad schema", func(t *testing.T) {
		t.Parallel()
		p := &fakeProvider{}
		_, _, err := ChatJSON(ctx, p, req, map[string]any{"type": 5})
		require.ErrorContains(t, err, "JSON schema")
		require.Empty(t, p.reqs)
	})
}

func TestRequestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		req     Request
		wantErr string
	}{
		{"ok", Request{Messages: []Message{System("s"), User("u"), {Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1", Name: "t"}}}, ToolResult("1", "r")}}, ""},
		{"no messages", Request{}, "no messages"},
		{"bad role", Request{Messages: []Message{{Role: "robot"}}}, `unknown role "robot"`},
		{"tool without id", Request{Messages: []Message{{Role: RoleTool, Content: "x"}}}, "tool_call_id"},
		{"call without name", Request{Messages: []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "1"}}}}}, "needs an id and a name"},
		{"image without data", Request{Messages: []Message{User("u", Image{MIME: "image/png"})}}, "MIME type and data"},
		{"tool without name", Request{Messages: []Message{User("u")}, Tools: []Tool{{}}}, "tool 0 has no name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := tt.req.Validate()
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestToolCallArguments(t *testing.T) {
	t.Parallel()
	require.Equal(t, "{}", ToolCall{}.ArgumentsJSON())
	require.Equal(t, `{"a":1}`, ToolCall{Arguments: map[string]any{"a": 1}}.ArgumentsJSON())
	require.Equal(t, `{"raw":true}`, ToolCall{Arguments: map[string]any{"a": 1}, RawArguments: `{"raw":true}`}.ArgumentsJSON())
	require.Equal(t, map[string]any{}, DecodeArguments(""))
	require.Equal(t, map[string]any{"a": float64(1)}, DecodeArguments(`{"a":1}`))
	require.Nil(t, DecodeArguments(`[1,2]`))
	require.Nil(t, DecodeArguments(`{"a":`))
}
