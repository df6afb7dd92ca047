package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMCPToolsListPortable checks tools/list by the rules of the MCP
// Inspector's --strict portability check (TestMCPInspectorStrict in
// internal/cli runs the check itself): no boolean sub-schema, no type
// array, no schema that constrains nothing; and the listing is at most
// 20 KB.
func TestMCPToolsListPortable(t *testing.T) {
	t.Parallel()
	b := setupMCP(t)
	tools, err := b.session.ListTools(context.Background(), nil)
	require.NoError(t, err)
	listing, err := json.Marshal(tools)
	require.NoError(t, err)
	require.LessOrEqual(t, len(listing), 20*1024, "tools/list is %d bytes", len(listing))

	var generic struct {
		Tools []map[string]any `json:"tools"`
	}
	require.NoError(t, json.Unmarshal(listing, &generic))
	require.Len(t, generic.Tools, 7)
	var findings []string
	for _, tool := range generic.Tools {
		for _, kind := range []string{"inputSchema", "outputSchema"} {
			s, ok := tool[kind]
			require.True(t, ok, "%s has no %s", tool["name"], kind)
			lintSchema(s, fmt.Sprintf("%s.%s", tool["name"], kind), "", &findings)
		}
	}
	require.Empty(t, findings)
}

// Keywords that apply a sub-schema, and the keywords that constrain a
// value (as the Inspector counts them, less those Skein never uses).
var (
	schemaKeywords = []string{"items", "additionalProperties", "not", "contains", "propertyNames"}
	listKeywords   = []string{"anyOf", "oneOf", "allOf", "prefixItems"}
	mapKeywords    = []string{"properties", "$defs", "patternProperties"}
	constraining   = []string{"type", "enum", "const", "format", "pattern", "minimum", "maximum", "minLength", "maxLength", "minItems", "maxItems", "required", "anyOf", "oneOf", "allOf", "not", "items", "prefixItems", "properties", "additionalProperties", "$ref"}
	booleanAllowed = map[string]bool{"additionalProperties": true}
)

func lintSchema(s any, path, keyword string, findings *[]string) {
	if b, ok := s.(bool); ok {
		if !booleanAllowed[keyword] {
			*findings = append(*findings, fmt.Sprintf("%s: bare %v", path, b))
		}
		return
	}
	m, ok := s.(map[string]any)
	if !ok {
		*findings = append(*findings, fmt.Sprintf("%s: not a schema: %v", path, s))
		return
	}
	if _, ok := m["type"].([]any); ok {
		*findings = append(*findings, fmt.Sprintf("%s: type is an array %v", path, m["type"]))
	}
	constrains := false
	for _, k := range constraining {
		if _, ok := m[k]; ok {
			constrains = true
		}
	}
	if !constrains {
		*findings = append(*findings, fmt.Sprintf("%s: constrains nothing", path))
	}
	for _, k := range schemaKeywords {
		if c, ok := m[k]; ok {
			lintSchema(c, path+"."+k, k, findings)
		}
	}
	for _, k := range listKeywords {
		if list, ok := m[k].([]any); ok {
			for i, c := range list {
				lintSchema(c, fmt.Sprintf("%s.%s[%d]", path, k, i), k, findings)
			}
		}
	}
	for _, k := range mapKeywords {
		if props, ok := m[k].(map[string]any); ok {
			for name, c := range props {
				lintSchema(c, path+"."+k+"."+name, k, findings)
			}
		}
	}
}
