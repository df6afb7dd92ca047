package cli_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResumeRerunsMaskedStatePatch: a step whose only secret is in its
// _state_patch (a set node's vars) is stored with the value masked, so a
// resume runs it again rather than hand "***" to the nodes after it.
func TestResumeRerunsMaskedStatePatch(t *testing.T) {
	t.Parallel()
	const secret = "patch-canary-4f1d9e"
	dir := t.TempDir()
	got, open := filepath.Join(dir, "got"), filepath.Join(dir, "open")
	flow := filepath.Join(dir, "patch.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: patch
secrets: [TOKEN]
nodes:
  - {id: keep, type: set, values: {ok: true}, vars: {tok: "{{ secrets.TOKEN }}"}}
  - {id: gate, type: shell, command: [test, -f, "`+open+`"]}
  - {id: use, type: shell, command: [sh, -c, 'printf %s "$1" > "$2"', x, "{{ vars.tok }}", "`+got+`"]}
edges:
  - {from: keep, to: gate}
  - {from: gate, to: use}
`), 0o644))
	env := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(env, []byte("TOKEN="+secret+"\n"), 0o600))
	sk := filepath.Join(dir, ".skein")

	first, doc := runJSONIn(t, sk, "--secrets-file", env, flow)
	require.Equal(t, 1, first.code, first.stderr)
	id := doc["execution_id"].(string)

	require.NoError(t, os.WriteFile(open, nil, 0o644))
	r := skein(t, "resume", "--dir", sk, "--output", "json", "--secrets-file", env, id)
	require.Equal(t, 0, r.code, r.stderr+r.stdout)
	require.NotContains(t, r.stdout+r.stderr, secret)
	data, err := os.ReadFile(got)
	require.NoError(t, err)
	require.Equal(t, secret, string(data), "use got the secret, not ***")
	var res map[string]any
	require.NoError(t, jsonUnmarshal(r.stdout, &res))
	for _, s := range res["steps"].([]any) {
		if s := s.(map[string]any); s["node"] == "keep" {
			require.Equal(t, false, s["cached"], "keep ran again")
		}
	}
	for _, f := range []string{"skein.db", "skein.db-wal"} { // the log a closed database keeps
		db, err := os.ReadFile(filepath.Join(sk, f))
		if f == "skein.db-wal" && errors.Is(err, fs.ErrNotExist) {
			continue
		}
		require.NoError(t, err)
		require.NotContains(t, string(db), secret, "the _state_patch is stored masked (%s)", f)
	}
}
