package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
)

// A tool whose input schema Skein cannot read gets no check before the
// call: the server has the last word. Nothing is fetched for it, and a
// schema that would loop forever is one of them, not a crash.
func TestUnreadableSchemasLeaveItToTheServer(t *testing.T) {
	for name, schema := range map[string]any{
		"a remote reference":         map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"$ref": "https://example.com/a.json"}}},
		"a loop":                     map[string]any{"$ref": "#"},
		"an unknown draft":           map[string]any{"$schema": "https://example.com/draft", "type": "object"},
		"draft-04's boolean minimum": map[string]any{"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "properties": map[string]any{"n": map[string]any{"minimum": 1, "exclusiveMinimum": true}}},
	} {
		tool := &mcp.Tool{Server: "s", Tool: &sdk.Tool{Name: "t", InputSchema: schema}}
		require.NoError(t, tool.CheckArguments(map[string]any{"a": 1, "n": 0}), name)
	}
}

// Every bad argument is named, with its path, in one error.
func TestCheckArgumentsNamesEachField(t *testing.T) {
	tool := &mcp.Tool{Server: "s", Tool: &sdk.Tool{Name: "t", InputSchema: map[string]any{
		"$schema": "http://json-schema.org/draft-07/schema#",
		"type":    "object",
		"properties": map[string]any{
			"path":  map[string]any{"type": "string"},
			"lines": map[string]any{"type": "array", "items": map[string]any{"$ref": "#/definitions/range"}},
		},
		"definitions": map[string]any{"range": map[string]any{
			"type": "object", "properties": map[string]any{"from": map[string]any{"type": "integer", "minimum": 1}}, "required": []any{"from"}}},
		"required":             []any{"path"},
		"additionalProperties": false,
	}}}
	err := tool.CheckArguments(map[string]any{"lines": []any{map[string]any{"from": 0}, map[string]any{}}, "mode": "x"})
	var e *node.Error
	require.ErrorAs(t, err, &e)
	require.Equal(t, "invalid_arguments", e.Code)
	require.Equal(t, `arguments of tool "t" (MCP server "s") do not match its input schema: `+
		`path: is required; lines[0].from: must be >= 1, is 0; lines[1].from: is required; mode: is not a parameter of this tool`, e.Message)
	require.Equal(t, []any{
		map[string]any{"field": "path", "message": "is required"},
		map[string]any{"field": "lines[0].from", "message": "must be >= 1, is 0"},
		map[string]any{"field": "lines[1].from", "message": "is required"},
		map[string]any{"field": "mode", "message": "is not a parameter of this tool"},
	}, e.Details["errors"])
	require.NoError(t, tool.CheckArguments(map[string]any{"path": "a", "lines": []any{map[string]any{"from": 2}}}))
}
