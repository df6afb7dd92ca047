package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/rundoc"
)

// TestJSONFollowsTheRunSchema: `run -o json` and `runs show -o json` print
// the one run document that schema/run.schema.json describes, for a run
// that completes and one that fails.
func TestJSONFollowsTheRunSchema(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../schema/run.schema.json")
	require.NoError(t, err)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	require.NoError(t, c.AddResource(rundoc.SchemaID, doc))
	schema, err := c.Compile(rundoc.SchemaID)
	require.NoError(t, err)
	valid := func(out string) map[string]any {
		t.Helper()
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(out)))
		require.NoError(t, err, out)
		require.NoError(t, schema.Validate(inst), out)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		return m
	}

	sk := filepath.Join(t.TempDir(), ".skein")
	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		status string
	}{
		{"completed", []string{"testdata/ok.yaml", "-i", "city=Paris"}, 0, "completed"},
		{"failed", []string{"testdata/fail.yaml"}, 1, "failed"},
	} {
		r := skein(t, append([]string{"run", "--output", "json", "--dir", sk}, tc.args...)...)
		require.Equal(t, tc.code, r.code, r.stderr)
		m := valid(r.stdout)
		require.Equal(t, tc.status, m["status"])
		show := skein(t, "runs", "show", "--output", "json", "--dir", sk, m["execution_id"].(string))
		require.Equal(t, 0, show.code, show.stderr)
		require.JSONEq(t, r.stdout, show.stdout, "%s: run and runs show print the same document", tc.name)
		valid(show.stdout)
	}
}
