package workflow_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/workflow"
)

func TestOutputMemoryLimit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value string
		want  int64
		err   string
	}{
		{value: "512MiB", want: 512 << 20},
		{value: "2 GiB", want: 2 << 30},
		{value: "1.5GB", want: 1_500_000_000},
		{value: "16777216", want: 16 << 20},
		{value: `"16777216"`, want: 16 << 20},
		{value: "12KiB", err: "max_output_memory must be between 1.0 MiB and 1.0 TiB, not 12 KiB"},
		{value: "-5", err: "max_output_memory must be between 1.0 MiB and 1.0 TiB, not -5"},
		{value: "lots", err: `bad size for max_output_memory: "lots" is not a size (write e.g. 256MiB, 1GiB or a number of bytes)`},
		{value: "[1]", err: "max_output_memory must be a size such as 256MiB"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			t.Parallel()
			src := "version: 1\nname: m\nlimits: {max_output_memory: " + tt.value + "}\nnodes:\n  - {id: a, type: set, values: {x: 1}}\n"
			w, ds := workflow.Decode("m.yaml", []byte(src))
			if tt.err != "" {
				require.True(t, ds.HasErrors())
				require.Contains(t, ds.Error(), tt.err)
				require.Contains(t, ds.Error(), "m.yaml:3:", "the error points at the value")
				return
			}
			require.False(t, ds.HasErrors(), ds.Error())
			require.Equal(t, tt.want, w.Limits.MaxOutputMemory)
		})
	}
}
