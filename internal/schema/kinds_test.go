package schema_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/schema"
	"github.com/skeinhq/skein/node"
)

// TestKindsDescribeEveryKind: the editor's view lists every registered
// kind once, grouped as docs/nodes.md groups them, with its declared
// parameters and handles.
func TestKindsDescribeEveryKind(t *testing.T) {
	t.Parallel()
	kinds := schema.Kinds(node.Default)
	byKind := map[string]schema.Kind{}
	for _, k := range kinds {
		_, dup := byKind[k.Kind]
		require.False(t, dup, "kind %s listed twice", k.Kind)
		byKind[k.Kind] = k
	}
	require.ElementsMatch(t, node.Default.Kinds(), keys(byKind), "every registered kind, no other")

	groups := []string{}
	for _, k := range kinds {
		if len(groups) == 0 || groups[len(groups)-1] != k.Group {
			groups = append(groups, k.Group)
		}
	}
	require.Equal(t, []string{"Triggers", "Control", "Data", "Actions", "AI"}, groups, "grouped in the docs' order")

	for _, spec := range node.Default.Specs() {
		k := byKind[spec.Kind]
		require.Len(t, k.Params, len(spec.Params), spec.Kind)
		for i, p := range spec.Params {
			got := k.Params[i]
			require.Equal(t, p.Name, got.Name)
			require.Equal(t, string(p.Type), got.Type, "%s.%s", spec.Kind, p.Name)
			require.Equal(t, p.Required, got.Required, "%s.%s", spec.Kind, p.Name)
			require.Equal(t, p.Default, got.Default, "%s.%s", spec.Kind, p.Name)
			require.Equal(t, p.Description, got.Description, "%s.%s", spec.Kind, p.Name)
			require.Equal(t, p.Enum, got.Enum, "%s.%s", spec.Kind, p.Name)
		}
	}

	shell := byKind["shell"]
	require.Equal(t, "action", shell.Category)
	require.Equal(t, []string{""}, shell.Handles, "an action follows its default handle")
	require.True(t, shell.ErrorHandle, "and error with on_error: route")
	cmd := shell.Params[0]
	require.Equal(t, "command", cmd.Name)
	require.True(t, cmd.Required)

	iff := byKind["if"]
	require.Equal(t, []string{"true", "false"}, iff.Handles)
	require.False(t, iff.ErrorHandle)
	require.Equal(t, "false", iff.FallThrough)

	sw := byKind["switch"]
	require.Equal(t, []string{"default"}, sw.Handles)
	require.True(t, sw.DynamicHandles, "a switch's cases add handles")
	require.Equal(t, "one per case name", sw.DynamicHandlesDoc)
	require.Equal(t, "cases", sw.Params[0].Name)
	require.Equal(t, "name", sw.Params[0].Items[0].Name, "the cases' fields are declared")

	manual := byKind["trigger.manual"]
	require.Equal(t, "trigger", manual.Category)
	require.Equal(t, "trigger", manual.Role)

	fields := schema.CommonFields()
	require.Equal(t, "id", fields[0].Name)
	names := map[string]bool{}
	for _, f := range fields {
		names[f.Name] = true
	}
	require.True(t, names["checks"] && names["expect"] && names["on_error"], "the fields of the Checks tab and on_error")
}

func keys(m map[string]schema.Kind) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
