//go:build unix

package shell_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/nodes/shell"
)

// With the run's blobs, a long stream goes to a blob as it is printed;
// what the output holds reads back as the command printed it.
func TestLongOutputGoesToABlob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		command []any
		limit   int
		check   func(t *testing.T, out map[string]any, text func(key string) string)
	}{
		{
			name:    "stdout, cut at the limit inside a character",
			command: []any{"sh", "-c", `yes é | head -c 300000`},
			limit:   200_002, // 66,667 times "é\n", and the first byte of an "é"
			check: func(t *testing.T, out map[string]any, text func(string) string) {
				got := text("stdout")
				require.Len(t, got, 200_001, "the cut character is dropped whole")
				require.True(t, got == strings.Repeat("é\n", 66_667), "the text is what the command printed")
				require.Equal(t, map[string]any{"stdout": true, "stderr": false}, out["truncated"])
			},
		},
		{
			name:    "stderr",
			command: []any{"sh", "-c", `head -c 100000 /dev/zero | tr "\0" e >&2`},
			check: func(t *testing.T, out map[string]any, text func(string) string) {
				require.True(t, text("stderr") == strings.Repeat("e", 100_000))
				require.Equal(t, "", out["stdout"])
			},
		},
		{
			name:    "JSON stdout is parsed from its file",
			command: []any{"sh", "-c", `printf '['; seq -s, 1 30000; printf ']'`},
			check: func(t *testing.T, out map[string]any, text func(string) string) {
				require.True(t, strings.HasPrefix(text("stdout"), "[1,2,3,"))
				json := out["json"].(map[string]any)
				require.Equal(t, 30000, json["count"])
				require.Equal(t, 30000, json["items"].([]any)[29999])
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			store, err := blob.NewStore(t.TempDir(), nil)
			require.NoError(t, err)
			call := b.call(map[string]any{"command": tt.command})
			if tt.limit > 0 {
				call.Params["max_output"] = tt.limit
			}
			call.Blobs = store
			out, err := (&shell.Shell{}).Run(t.Context(), call)
			require.NoError(t, err)
			tt.check(t, out, func(key string) string {
				bl, ok := out[key].(*blob.Blob)
				require.True(t, ok, "%s is a blob: %T", key, out[key])
				v, err := bl.Load()
				require.NoError(t, err)
				return v.(string)
			})
			entries, err := os.ReadDir(store.Dir())
			require.NoError(t, err)
			for _, e := range entries {
				require.False(t, strings.HasPrefix(e.Name(), "."), "no temporary file is left: %s", e.Name())
			}
		})
	}
}

// A command that fails keeps no blob.
func TestAFailedCommandKeepsNoBlob(t *testing.T) {
	t.Parallel()
	b := setup(t)
	runDir := t.TempDir()
	store, err := blob.NewStore(runDir, nil)
	require.NoError(t, err)
	call := b.call(map[string]any{"command": []any{"sh", "-c", `head -c 200000 /dev/zero; exit 3`}})
	call.Blobs = store
	_, err = (&shell.Shell{}).Run(t.Context(), call)
	require.Equal(t, "exit_code", nodeError(t, err).Code)
	entries, err := os.ReadDir(filepath.Join(runDir, blob.Folder))
	require.NoError(t, err)
	require.Empty(t, entries)
}
