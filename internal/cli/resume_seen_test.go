package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestResumeSeesWhatTheRunSaw: a run whose steps output a secret and
// bytes that are not UTF-8 fails later and is resumed: the step whose
// output had to be masked runs again and says why; the one with raw bytes
// is reused exactly, so the step that reads it is reused too.
func TestResumeSeesWhatTheRunSaw(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	log, open := filepath.Join(dir, "log"), filepath.Join(dir, "open")
	flow := filepath.Join(dir, "seen.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: seen
secrets: [TOKEN]
nodes:
  - {id: secret, type: shell, command: [sh, -c, 'echo secret >> "$1"; printf "token=%s" "$2"', x, "`+log+`", "{{ secrets.TOKEN }}"]}
  - {id: binary, type: shell, command: [sh, -c, 'echo binary >> "$1"; printf "\377\376ok"', x, "`+log+`"]}
  - {id: use, type: shell, command: [sh, -c, 'echo use >> "$1"', x, "`+log+`", "{{ binary.stdout }}"]}
  - {id: gate, type: shell, command: [test, -f, "`+open+`"]}
edges:
  - {from: secret, to: binary}
  - {from: binary, to: use}
  - {from: use, to: gate}
`), 0o644))
	env := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(env, []byte("TOKEN=hunter2-very-secret\n"), 0o600))
	sk := filepath.Join(dir, ".skein")

	first, doc := runJSONIn(t, sk, "--secrets-file", env, flow)
	require.Equal(t, 1, first.code, first.stderr)
	require.Equal(t, "failed", doc["status"])
	id := doc["execution_id"].(string)

	// The plan needs the secrets the resume needs: the steps' hashes
	// are of their parameters as rendered.
	plan := skein(t, "resume", "--dir", sk, "--plan", id)
	require.Equal(t, 2, plan.code)
	require.Contains(t, plan.stderr, "secret TOKEN is not set")
	plan = skein(t, "resume", "--dir", sk, "--secrets-file", env, "--plan", id)
	require.Equal(t, 0, plan.code, plan.stderr)
	require.Regexp(t, `run\s+secret\s+its earlier output held a secret value, stored masked, so it is not reused`, plan.stdout)
	require.NotContains(t, plan.stdout, "hunter2-very-secret")

	require.NoError(t, os.WriteFile(open, nil, 0o644))
	r := skein(t, "resume", "--dir", sk, "--secrets-file", env, id)
	require.Equal(t, 0, r.code, r.stderr+r.stdout)
	require.Contains(t, r.stdout, "node secret runs again: its earlier output held a secret value, stored masked, so it is not reused")
	require.NotContains(t, r.stdout+r.stderr, "hunter2-very-secret")

	data, err := os.ReadFile(log)
	require.NoError(t, err)
	require.Equal(t, []string{"secret", "binary", "use", "secret"}, strings.Fields(string(data)),
		"only the masked step ran again; the raw bytes were reused as they were, so use was too")
}

// runJSONIn runs a workflow with --output json in the folder sk.
func runJSONIn(t *testing.T, sk string, args ...string) (result, map[string]any) {
	t.Helper()
	r := skein(t, append([]string{"run", "--output", "json", "--dir", sk}, args...)...)
	var m map[string]any
	require.NoError(t, jsonUnmarshal(r.stdout, &m), r.stdout+r.stderr)
	return r, m
}

func jsonUnmarshal(s string, v any) error { return json.Unmarshal([]byte(s), v) }
