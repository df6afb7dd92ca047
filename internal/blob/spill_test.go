package blob_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
)

func TestSpill(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("b", blob.InlineLimit+1)
	many := make([]any, 20_000)
	for i := range many {
		many[i] = map[string]any{"i": i, "name": fmt.Sprintf("item %d", i)}
	}
	type moved map[string]string // top-level key → blob type, or "" when it stays
	tests := []struct {
		name  string
		in    map[string]any
		keep  []string
		limit int
		want  moved
	}{
		{name: "small values stay", in: map[string]any{"stdout": "hi", "exit_code": 0}, want: moved{"stdout": "", "exit_code": ""}},
		{name: "a long text moves", in: map[string]any{"stdout": big, "stderr": ""}, want: moved{"stdout": blob.Text, "stderr": ""}},
		{name: "a long list moves whole", in: map[string]any{"json": many, "n": 1}, want: moved{"json": blob.JSON, "n": ""}},
		{name: "a kept list stays a list", in: map[string]any{"items": many}, keep: []string{"items"}, want: moved{"items": ""}},
		{name: "a lower limit moves more", in: map[string]any{"a": strings.Repeat("a", 5000), "b": "tiny"}, limit: blob.MinSize, want: moved{"a": blob.Text, "b": ""}},
		{
			name:  "an output over the limit in many values moves its largest",
			in:    map[string]any{"a": strings.Repeat("a", 40<<10), "b": strings.Repeat("b", 30<<10), "c": strings.Repeat("c", 10)},
			limit: 64 << 10,
			want:  moved{"a": blob.Text, "b": "", "c": ""},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t, nil)
			limit := tt.limit
			if limit == 0 {
				limit = blob.InlineLimit
			}
			out, size, err := b.st.Spill(tt.in, limit, tt.keep...)
			require.NoError(t, err)
			if tt.keep == nil {
				require.LessOrEqual(t, size, limit+(100<<10), "what stays is small")
			}
			for k, typ := range tt.want {
				bl, isBlob := out[k].(*blob.Blob)
				if typ == "" {
					require.False(t, isBlob, "%s stays in memory", k)
					require.Equal(t, tt.in[k], out[k])
					continue
				}
				require.True(t, isBlob, "%s moves to a blob", k)
				require.Equal(t, typ, bl.Type())
				got, err := bl.Load()
				require.NoError(t, err)
				require.Equal(t, tt.in[k], got, "%s reads back the same", k)
			}
			if tt.keep != nil {
				require.IsType(t, []any{}, out["items"])
			}
		})
	}
}

func TestSpillLeavesItsInputAlone(t *testing.T) {
	t.Parallel()
	b := setup(t, nil)
	big := strings.Repeat("x", blob.InlineLimit+1)
	in := map[string]any{"nested": map[string]any{"text": big, "n": 1}}
	out, _, err := b.st.Spill(in, blob.InlineLimit)
	require.NoError(t, err)
	require.Equal(t, big, in["nested"].(map[string]any)["text"])
	require.IsType(t, &blob.Blob{}, out["nested"].(map[string]any)["text"])

	small := map[string]any{"a": "b"}
	out, _, err = b.st.Spill(small, blob.InlineLimit)
	require.NoError(t, err)
	out["c"] = "d"
	require.Equal(t, "d", small["c"], "nothing moved: the same map comes back, not a copy")
}

func TestBudgetLowersTheLimit(t *testing.T) {
	t.Parallel()
	bud := blob.NewBudget(1 << 20)
	require.Equal(t, blob.InlineLimit, bud.Limit())
	bud.Add(1000 << 10)
	require.Equal(t, 24<<10, bud.Limit(), "what is left of the budget")
	bud.Add(100 << 10)
	require.Equal(t, blob.MinSize, bud.Limit(), "spent: every value of 1 KiB or more moves")
	require.Equal(t, int64(blob.DefaultBudget), blob.NewBudget(0).Max())
}

// TestSpillWithinKeepsTheBudgetUnderConcurrentTasks: 64 tasks that end at
// once, each with a 40 KB output, keep in memory what a 1 MiB budget holds
// — 26 of them, however they interleave — and move the others.
func TestSpillWithinKeepsTheBudgetUnderConcurrentTasks(t *testing.T) {
	t.Parallel()
	st, err := blob.NewStore(t.TempDir(), func(string) bool { return false })
	require.NoError(t, err)
	bud := blob.NewBudget(1 << 20)
	const tasks = 64
	kept := make(chan bool, tasks)
	var start sync.WaitGroup
	start.Add(1)
	var done sync.WaitGroup
	for range tasks {
		done.Add(1)
		go func() {
			defer done.Done()
			start.Wait()
			out, err := st.SpillWithin(bud, map[string]any{"stdout": strings.Repeat("x", 40_000)})
			require.NoError(t, err)
			_, isText := out["stdout"].(string)
			kept <- isText
		}()
	}
	start.Done()
	done.Wait()
	close(kept)
	n := 0
	for k := range kept {
		if k {
			n++
		}
	}
	require.Equal(t, 26, n, "1 MiB holds 26 outputs of 40 KB")
	require.LessOrEqual(t, bud.Held(), bud.Max())
}
