package workflow_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// TestBigMappingsDecode checks that a set node with 40,000 values, written
// out or as aliases, decodes whole and validates clean, and that the index
// big maps get finds their duplicate keys, merge keys and unknown keys as a
// scan did. How long they take is measured by BenchmarkValidateBigValues.
func TestBigMappingsDecode(t *testing.T) {
	t.Parallel()
	const n = 40_000
	tests := []struct {
		name    string
		aliased bool
		refs    int
		want    string
	}{
		{"values", false, 0, "value 39999"},
		{"aliases", true, 0, "some text"},
		{"references", false, n, "value 39999"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w, ds := workflow.Decode("big.yaml", bigValues(n, tt.aliased, tt.refs))
			require.NotNil(t, w, ds.Error())
			ds = append(ds, workflow.Validate(w, node.Default)...)
			require.Empty(t, ds, "a big set node should be clean")
			values, ok := w.Node("big").Params["values"].(map[string]any)
			require.True(t, ok, "values should decode to a map")
			want := n
			if tt.aliased {
				want++ // the anchor's own key
			}
			require.Len(t, values, want)
			require.Equal(t, tt.want, values[fmt.Sprintf("k%d", n-1)])
		})
	}
}

// bigMap writes a YAML map of n keys k0..k(n-1), indented by indent, one
// key a line, with the first key on line first.
func bigMap(b *strings.Builder, n int, indent string) {
	for i := range n {
		fmt.Fprintf(b, "%sk%d: %d\n", indent, i, i)
	}
}

func TestBigMappingsKeys(t *testing.T) {
	t.Parallel()
	const n = 1000
	head := "version: 1\nname: big\nnodes:\n  - {id: start, type: trigger.manual}\n  - id: big\n    type: set\n    values:\n"
	tail := "edges:\n  - {from: start, to: big}\n"

	var dupYAML strings.Builder
	dupYAML.WriteString(head)
	bigMap(&dupYAML, n, "      ")
	dupYAML.WriteString("      k500: again\n" + tail)

	var dupJSON strings.Builder
	dupJSON.WriteString("{\"version\": 1, \"name\": \"big\", \"nodes\": [{\"id\": \"big\", \"type\": \"set\", \"values\": {\n")
	for i := range n {
		fmt.Fprintf(&dupJSON, "\"k%d\": %d,\n", i, i)
	}
	dupJSON.WriteString("\"k500\": 0}}]}\n")

	var merged strings.Builder
	merged.WriteString("version: 1\nname: big\nbase: &base\n")
	bigMap(&merged, n, "  ")
	merged.WriteString("nodes:\n  - {id: start, type: trigger.manual}\n  - id: big\n    type: set\n    values:\n      <<: *base\n      k7: mine\n" + tail)

	var unknown strings.Builder
	unknown.WriteString("version: 1\nname: big\nnodes:\n  - {id: start, type: trigger.manual}\n  - id: big\n    type: set\n    values: {}\n")
	bigMap(&unknown, n, "    ")
	unknown.WriteString(tail)

	t.Run("duplicate key, YAML", func(t *testing.T) {
		t.Parallel()
		w, ds := workflow.Decode("dup.yaml", []byte(dupYAML.String()))
		require.Nil(t, w)
		require.Equal(t, `dup.yaml:1008:7: error: YAML: duplicate key: mapping key "k500" already defined at [508:7]; remove one of them`, ds.Error())
	})
	t.Run("duplicate key, JSON", func(t *testing.T) {
		t.Parallel()
		w, ds := workflow.Decode("dup.json", []byte(dupJSON.String()))
		require.Nil(t, w)
		require.Equal(t, `dup.json:1002:1: error: duplicate key "k500" (first at 502:1)`, ds.Error())
	})
	t.Run("merge key", func(t *testing.T) {
		t.Parallel()
		w, ds := workflow.Decode("merge.yaml", []byte(merged.String()))
		require.NotNil(t, w, ds.Error())
		values := w.Node("big").Params["values"].(map[string]any)
		require.Len(t, values, n)
		require.Equal(t, "mine", values["k7"], "a key written out overrides a merged one")
		require.Equal(t, 8, values["k8"])
	})
	t.Run("reference to no output", func(t *testing.T) {
		t.Parallel()
		src := strings.Replace(string(bigValues(n, false, n)), "{{ big.k999 }}", "{{ big.k1000 }}", 1)
		w, ds := workflow.Decode("refs.yaml", []byte(src))
		require.NotNil(t, w, ds.Error())
		ds = workflow.Validate(w, node.Default)
		require.Len(t, ds, 1)
		require.Contains(t, ds[0].String(), `refs.yaml:2010:17: error: values.r999 reads big.k1000, but node "big" (set) has no output "k1000"`)
	})
	t.Run("unknown keys", func(t *testing.T) {
		t.Parallel()
		w, ds := workflow.Decode("unknown.yaml", []byte(unknown.String()))
		require.NotNil(t, w, ds.Error())
		ds = workflow.Validate(w, node.Default)
		require.Len(t, ds, n)
		ds.Sort()
		require.Contains(t, ds[999].String(), `unknown.yaml:1007:5: error: unknown key "k999" for node type set`)
	})
}
