package mcp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/skeinhq/skein/node"
)

// Tool is a tool of a server, as its session listed it.
type Tool struct {
	Server string
	*sdk.Tool

	once   sync.Once
	schema *jsonschema.Schema // nil when the tool has none or it does not compile
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
	doc, err := jsonValue(args)
	if err != nil {
		return &node.Error{Code: "invalid_arguments", Category: node.CategoryValidation, Permanent: true, Err: err,
			Message: fmt.Sprintf("arguments of tool %q (MCP server %q) are not JSON: %v", t.Name, t.Server, err)}
	}
	err = t.schema.Validate(doc)
	if err == nil {
		return nil
	}
	ve, ok := err.(*jsonschema.ValidationError)
	if !ok {
		return &node.Error{Code: "invalid_arguments", Category: node.CategoryValidation, Permanent: true, Err: err,
			Message: fmt.Sprintf("arguments of tool %q (MCP server %q): %v", t.Name, t.Server, err)}
	}
	var fields []FieldError
	collectFieldErrors(ve, &fields)
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
		Code: "invalid_arguments", Category: node.CategoryValidation, Permanent: true, Err: err,
		Message: fmt.Sprintf("arguments of tool %q (MCP server %q) do not match its input schema: %s", t.Name, t.Server, strings.Join(parts, "; ")),
		Details: map[string]any{"server": t.Server, "tool": t.Name, "errors": list},
	}
}

// compile compiles the tool's input schema. A schema that does not compile
// (a draft or a reference this validator cannot follow) is ignored rather
// than blocking calls the server may well accept.
func (t *Tool) compile() {
	if t.Tool == nil || t.InputSchema == nil {
		return
	}
	doc, err := jsonValue(t.InputSchema)
	if err != nil {
		return
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(noLoader{}) // a schema from a server never makes Skein fetch anything
	const url = "mcp:///input-schema.json"
	if c.AddResource(url, doc) != nil {
		return
	}
	if s, err := c.Compile(url); err == nil {
		t.schema = s
	}
}

// printer writes validation messages.
var printer = message.NewPrinter(language.English)

// noLoader refuses every external reference.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %s is not loaded", url)
}

// jsonValue returns v as the validator reads JSON: maps, slices,
// json.Number, strings, bools and nil.
func jsonValue(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonschema.UnmarshalJSON(bytes.NewReader(b))
}

// collectFieldErrors appends the leaves of a validation error tree, each
// with the path of the argument it is about.
func collectFieldErrors(e *jsonschema.ValidationError, out *[]FieldError) {
	if len(e.Causes) > 0 {
		for _, c := range e.Causes {
			collectFieldErrors(c, out)
		}
		return
	}
	loc := e.InstanceLocation
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		for _, m := range k.Missing {
			*out = append(*out, FieldError{Field: fieldPath(append(loc[:len(loc):len(loc)], m)), Message: "is required"})
		}
		return
	case *kind.AdditionalProperties:
		props := append([]string(nil), k.Properties...)
		sort.Strings(props)
		for _, p := range props {
			*out = append(*out, FieldError{Field: fieldPath(append(loc[:len(loc):len(loc)], p)), Message: "is not a parameter of this tool"})
		}
		return
	}
	msg := e.ErrorKind.LocalizedString(printer)
	*out = append(*out, FieldError{Field: fieldPath(loc), Message: msg})
}

// fieldPath writes an instance location as a field path: a.b[2].c.
func fieldPath(loc []string) string {
	var sb strings.Builder
	for _, tok := range loc {
		if isIndex(tok) {
			sb.WriteString("[" + tok + "]")
			continue
		}
		if sb.Len() > 0 {
			sb.WriteByte('.')
		}
		sb.WriteString(tok)
	}
	return sb.String()
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}
