package cli_test

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSecretsNeverRecorded uses a secret in an HTTP header that the server
// echoes back, prints it from a shell command, and makes a node fail with it
// in stderr. The value must appear nowhere: not in the run folder, the JSON
// output, or the terminal output.
func TestSecretsNeverRecorded(t *testing.T) {
	t.Parallel()
	const secret = "s3cr3t-Value-9f2c"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo", r.Header.Get("Authorization"))
		fmt.Fprintf(w, `{"auth": %q}`, r.Header.Get("Authorization"))
	}))
	defer srv.Close()

	dir := t.TempDir()
	flow := filepath.Join(dir, "secret.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: secret
secrets: [API_TOKEN]
nodes:
  - {id: start, type: trigger.manual}
  - id: call
    type: http
    url: "`+srv.URL+`/echo"
    headers: {Authorization: "Bearer {{ secrets.API_TOKEN }}"}
  - id: show
    type: shell
    command: [printf, "token=%s from %s", "{{ secrets.API_TOKEN }}", "{{ call.body.auth }}"]
  - id: leak
    type: shell
    command: [sh, -c, 'echo "bad token $0" >&2; exit 3', "{{ secrets.API_TOKEN }}"]
    on_error: continue
  - {id: keep, type: set, values: {copy: "{{ show.stdout }}"}}
edges:
  - {from: start, to: call}
  - {from: call, to: show}
  - {from: show, to: leak}
  - {from: leak, to: keep}
outputs:
  seen: "{{ keep.copy }}"
  header: "{{ call.headers['x-echo'] }}"
`), 0o644))
	envFile := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(envFile, []byte("API_TOKEN="+secret+"\n"), 0o600))
	runs := filepath.Join(dir, "runs")

	jr := skein(t, "run", "--output", "json", "--dir", runs, "--secrets-file", envFile, flow)
	require.Equal(t, 0, jr.code, jr.stderr+jr.stdout)
	var res map[string]any
	require.NoError(t, json.Unmarshal([]byte(jr.stdout), &res))
	require.Equal(t, "token=*** from Bearer ***", res["outputs"].(map[string]any)["seen"])
	require.Equal(t, "Bearer ***", res["outputs"].(map[string]any)["header"])
	require.NotContains(t, jr.stdout+jr.stderr, secret)

	tr := skein(t, "run", "--dir", runs, "--secrets-file", envFile, flow)
	require.Equal(t, 0, tr.code, tr.stderr+tr.stdout)
	require.Contains(t, tr.stdout, "***")
	require.NotContains(t, tr.stdout+tr.stderr, secret)

	files := 0
	require.NoError(t, filepath.WalkDir(runs, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		if b := filepath.Base(path); b == "run.json" || b == "events.jsonl" {
			files++
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		require.False(t, strings.Contains(string(data), secret), "%s holds the secret", path)
		return nil
	}))
	require.Equal(t, 4, files, "each run folder holds run.json and events.jsonl, and they were read")
}

func TestDenyPrivateNetworks(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "ok")
	}))
	defer srv.Close()
	dir := t.TempDir()
	flow := filepath.Join(dir, "local.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: local
nodes:
  - {id: call, type: http, url: "`+srv.URL+`/"}
`), 0o644))
	r := skein(t, "run", "--output", "json", "--dir", dir, flow)
	require.Equal(t, 0, r.code, r.stderr)
	r = skein(t, "run", "--output", "json", "--dir", dir, "--deny-private-networks", flow)
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stdout, "private networks are blocked")
}
