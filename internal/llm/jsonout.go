package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinhq/skein/internal/jsonvalid"
	"github.com/skeinhq/skein/node"
)

// Schema is a compiled JSON Schema for model replies.
type Schema struct {
	doc map[string]any
	sch *jsonvalid.Schema
}

// CompileSchema compiles a JSON Schema given as a plain map (as decoded
// from a workflow file).
func CompileSchema(doc map[string]any) (*Schema, error) {
	if doc == nil {
		return nil, Invalidf("no JSON schema given")
	}
	sch, err := jsonvalid.Compile(doc)
	if err != nil {
		return nil, Invalidf("JSON schema: %v", err)
	}
	return &Schema{doc: doc, sch: sch}, nil
}

// Doc returns the schema as it was given.
func (s *Schema) Doc() map[string]any { return s.doc }

// Parse reads a model's reply as JSON and validates it. It tolerates what
// models wrap JSON in: surrounding blank space and a ``` code fence. The
// value has plain Go types (map[string]any, []any, float64, string, bool).
func (s *Schema) Parse(text string) (any, error) {
	raw := stripFence(text)
	if raw == "" {
		return nil, errors.New("the reply is empty, not JSON")
	}
	var v any
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, fmt.Errorf("the reply is not JSON: %w", err)
	}
	problems, err := s.sch.Validate(v)
	if err != nil {
		return nil, fmt.Errorf("the reply is not JSON: %w", err)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("the reply does not match the schema: %s", describe(problems))
	}
	return v, nil
}

// describe writes what a reply misses, each with where it is:
// "at '/city': got number, want string; at '/': missing property 'days'".
func describe(problems []jsonvalid.Problem) string {
	at := func(p jsonvalid.Problem) string {
		if ptr := p.Pointer(); ptr != "" {
			return ptr
		}
		return "/"
	}
	parts := make([]string, len(problems))
	for i, p := range problems {
		switch p.Keyword {
		case "required", "additionalProperties":
			parent := jsonvalid.Problem{Path: p.Path[:len(p.Path)-1]}
			what := "missing property"
			if p.Keyword == "additionalProperties" {
				what = "property not allowed:"
			}
			parts[i] = fmt.Sprintf("at '%s': %s '%s'", at(parent), what, p.Path[len(p.Path)-1])
		default:
			parts[i] = fmt.Sprintf("at '%s': %s", at(p), p.Message)
		}
	}
	return strings.Join(parts, "; ")
}

func stripFence(text string) string {
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "```") {
		return t
	}
	t = strings.TrimPrefix(t, "```")
	// Drop the info string (```json).
	if i := strings.IndexByte(t, '\n'); i >= 0 {
		t = t[i+1:]
	} else {
		return ""
	}
	t = strings.TrimSpace(t)
	t = strings.TrimSuffix(t, "```")
	return strings.TrimSpace(t)
}

// ChatJSON asks p for a reply that is JSON matching schema, parses it and
// validates it. A reply that does not parse or validate gets one re-ask: the
// bad reply and a user message naming the problem are appended to the
// conversation. If the second reply fails too, the error is in category
// llm_malformed. The value has plain Go types. The Response is the last
// reply received, with Usage summed over both calls (it is returned with
// the error too, when there is one, so the tokens can still be counted).
//
// ChatJSON is for a final answer: req must not offer tools.
func ChatJSON(ctx context.Context, p Provider, req Request, schema map[string]any) (any, *Response, error) {
	if len(req.Tools) > 0 {
		return nil, nil, Invalidf("ChatJSON: the request offers tools; ask for JSON in a request without them")
	}
	sch, err := CompileSchema(schema)
	if err != nil {
		return nil, nil, err
	}
	req.JSONSchema = schema

	first, err := p.Chat(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	return Reask(ctx, p, req, sch, first)
}

// Reask parses first, the reply to req, which asked for JSON matching sch
// (req.JSONSchema), and validates it; a reply that does not parse or
// validate gets one re-ask as ChatJSON describes, without the tools req
// may have offered (an agent's final answer: the re-ask wants the answer,
// not another tool call). It returns what ChatJSON returns, the Response's
// Usage summed over first and the re-ask.
func Reask(ctx context.Context, p Provider, req Request, sch *Schema, first *Response) (any, *Response, error) {
	v, perr := sch.Parse(first.Text)
	if perr == nil {
		return v, first, nil
	}
	req.Tools = nil
	req.JSONSchema = sch.Doc()
	req.Messages = append(slices.Clone(req.Messages),
		Message{Role: RoleAssistant, Content: first.Text},
		User(ReaskMessage(perr)))
	second, err := p.Chat(ctx, req)
	if err != nil {
		return nil, first, err
	}
	second.Usage = first.Usage.Add(second.Usage)
	v, perr = sch.Parse(second.Text)
	if perr != nil {
		e := node.Fail(CategoryMalformed, CategoryMalformed,
			fmt.Errorf("the model's JSON reply is invalid after a re-ask: %w", perr))
		e.Details = map[string]any{"reply": clip([]byte(second.Text)), "error": perr.Error(), "attempts": 2}
		return nil, second, e
	}
	return v, second, nil
}

// ReaskMessage is the user message that asks again after an invalid JSON
// reply.
func ReaskMessage(err error) string {
	return "Your previous reply was not valid: " + err.Error() +
		"\nReply again with only a JSON value that matches the required schema, and nothing else."
}
