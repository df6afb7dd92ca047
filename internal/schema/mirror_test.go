package schema

import (
	"encoding/json"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard" // registers the providers too
	"github.com/skeinhq/skein/workflow"
)

// TestMirrorsWorkflowPackage checks that the values this package restates
// (it may not import workflow) still match the decoder's.
func TestMirrorsWorkflowPackage(t *testing.T) {
	t.Parallel()

	var fields []string
	for _, f := range commonFields() {
		fields = append(fields, f.name)
	}
	tests := []struct {
		name      string
		mirror    any
		workflows any
	}{
		{"common node fields", fields, workflow.CommonFields},
		{"input types", inputTypes, workflow.InputTypes},
		{"providers", providers, llm.Providers()},
		{"check types", checkTypes, workflow.CheckTypes},
		{"delivery events", deliveryEvents, workflow.DeliveryEvents},
		{"delivery retries", maxRetries, workflow.MaxDeliveryRetries},
		{"on_error values", onErrorValues, []string{workflow.OnErrorFail, workflow.OnErrorContinue, workflow.OnErrorRoute}},
		{"longest node id", maxIDLen, workflow.MaxIDLen},
		{"most nodes", maxNodes, workflow.MaxNodes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.workflows, tt.mirror, "the schema's copy differs from package workflow's")
		})
	}
}

// TestTopLevelKeysKnownToDecoder checks that every top-level key the schema
// allows is one the decoder reads, and that the schema allows every key of
// a file that uses them all.
func TestTopLevelKeysKnownToDecoder(t *testing.T) {
	t.Parallel()

	root, err := build(node.NewRegistry())
	require.NoError(t, err)
	props, _ := root["properties"].(object)
	keys := make([]string, 0, len(props))
	for k := range props {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	require.NotEmpty(t, keys)

	t.Run("control: a key the decoder does not read", func(t *testing.T) {
		t.Parallel()
		_, ds := workflow.Decode("t.json", []byte(`{"stages": null}`))
		require.NotEmpty(t, ds)
		require.Contains(t, ds[0].Message, "unknown key", "the decoder's message changed; this test looks for it")
	})
	for _, k := range keys {
		t.Run(k, func(t *testing.T) {
			t.Parallel()
			src, err := json.Marshal(map[string]any{k: nil})
			require.NoError(t, err)
			_, ds := workflow.Decode("t.json", src)
			for _, d := range ds {
				require.NotContains(t, d.Message, "unknown key", "the schema allows top-level key %q, the decoder does not", k)
			}
		})
	}
}
