package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// A template that divides by zero fails its node with a template error; the
// run ends failed and is recorded, and resumes once the file is fixed.
func TestDivisionByZeroFailsNodeAndResumes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "div.yaml")
	sk := filepath.Join(dir, ".skein")
	write := func(text string) {
		src := "version: 1\nname: div\nnodes:\n" +
			"  - {id: a, type: set, values: {n: 4, items: [1, 2]}}\n" +
			"  - {id: ratio, type: template, text: \"" + text + "\"}\n" +
			"edges:\n  - {from: a, to: ratio}\n"
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
	}

	for _, tc := range []struct{ name, text, want string }{
		{"infinity", "{{ 1 / 0 }}", "the value is +Inf"},
		{"nan in text", "r={{ 0.0 / 0 }}", "the value is NaN"},
		{"nested", "{{ map(a.items, # / 0) }}", "the value holds +Inf at [0]"},
	} {
		write(tc.text)
		first := skein(t, "run", "--output", "json", "--dir", sk, file)
		require.Equal(t, 1, first.code, tc.name+": "+first.stderr)
		var run struct {
			ID     string `json:"execution_id"`
			Status string `json:"status"`
			Steps  []struct {
				Node   string `json:"node"`
				Status string `json:"status"`
				Error  *struct {
					Category string `json:"category"`
					Message  string `json:"message"`
				} `json:"error"`
			} `json:"steps"`
		}
		require.NoError(t, json.Unmarshal([]byte(first.stdout), &run), first.stdout+first.stderr)
		require.Equal(t, "failed", string(run.Status), tc.name)
		require.Len(t, run.Steps, 2, tc.name)
		step := run.Steps[1]
		require.Equal(t, "ratio", step.Node)
		require.Equal(t, "failed", string(step.Status))
		require.NotNil(t, step.Error)
		require.Equal(t, "template", step.Error.Category)
		require.Contains(t, step.Error.Message, tc.want, tc.name)
		require.Contains(t, step.Error.Message, `"`+tc.text+`"`, "the error names the template")

		write("{{ a.n / 2 }}")
		second := skein(t, "resume", "--output", "json", "--dir", sk, run.ID)
		require.Equal(t, 0, second.code, tc.name+": "+second.stderr)
		res := decode(t, second)
		require.Equal(t, "completed", string(res.Status))
		cached, ran := res.cached()
		require.Equal(t, []string{"a"}, cached)
		require.Equal(t, []string{"ratio"}, ran)
	}
}
