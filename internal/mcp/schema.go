package mcp

import (
	"fmt"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/jsonvalid"
	"github.com/skeinhq/skein/node"
)

// Tool is a tool of a server, as its session listed it.
type Tool struct {
	Server string
	*sdk.Tool

	once   sync.Once
	schema *jsonvalid.Schema // nil when the tool has none or it does not compile
}

// FieldError is one way arguments miss a tool's input schema.
type FieldError struct {
	// Field is the argument's path, "a" or "items[2].name"; empty for the
	// arguments as a whole.
	Field   string `json:"field"`
	Message string `json:"message"`
}

// CheckArguments checks args against the tool's input schema. The error is
// a permanent node.Error (validation, invalid_arguments) whose message names
// the tool and each bad field; Details["errors"] lists them as FieldErrors.
// A tool without a usable schema accepts anything: the server has the last
// word.
func (t *Tool) CheckArguments(args map[string]any) error {
	t.once.Do(t.compile)
	if t.schema == nil {
		return nil
	}
	if args == nil {
		args = map[string]any{}
	}
	problems, err := t.schema.Validate(args)
	if err != nil {
		return &node.Error{Code: "invalid_arguments", Category: node.CategoryValidation, Permanent: true, Err: err,
			Message: fmt.Sprintf("arguments of tool %q (MCP server %q) are not JSON: %v", t.Name, t.Server, err)}
	}
	if len(problems) == 0 {
		return nil
	}
	fields := make([]FieldError, len(problems))
	for i, p := range problems {
		msg := p.Message
		if p.Keyword == "additionalProperties" {
			msg = "is not a parameter of this tool"
		}
		fields[i] = FieldError{Field: p.Field(), Message: msg}
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		if f.Field == "" {
			parts[i] = f.Message
		} else {
			parts[i] = f.Field + ": " + f.Message
		}
	}
	list := make([]any, len(fields))
	for i, f := range fields {
		list[i] = map[string]any{"field": f.Field, "message": f.Message}
	}
	return &node.Error{
		Code: "invalid_arguments", Category: node.CategoryValidation, Permanent: true,
		Message: fmt.Sprintf("arguments of tool %q (MCP server %q) do not match its input schema: %s", t.Name, t.Server, strings.Join(parts, "; ")),
		Details: map[string]any{"server": t.Server, "tool": t.Name, "errors": list},
	}
}

// compile compiles the tool's input schema. A schema that does not compile
// (a draft or a reference this validator cannot follow) is ignored rather
// than blocking calls the server may well accept. A schema from a server
// never makes Skein fetch anything.
func (t *Tool) compile() {
	if t.Tool == nil || t.InputSchema == nil {
		return
	}
	if s, err := jsonvalid.Compile(t.InputSchema); err == nil {
		t.schema = s
	}
}
