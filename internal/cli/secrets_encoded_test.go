package cli_test

import (
	"encoding/base64"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEncodedSecretsNeverRecorded: a command that prints a secret in
// base64 or hex leaves neither form in the output, the database or the
// run folder.
func TestEncodedSecretsNeverRecorded(t *testing.T) {
	t.Parallel()
	const secret = "correct-horse-battery-staple"
	dir := t.TempDir()
	flow := filepath.Join(dir, "enc.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: enc
secrets: [TOKEN]
nodes:
  - {id: b64, type: shell, command: [sh, -c, 'printf %s "$1" | base64', x, "{{ secrets.TOKEN }}"]}
  - {id: hexed, type: shell, command: [sh, -c, 'printf %s "$1" | od -An -tx1 | tr -d " \n"', x, "{{ secrets.TOKEN }}"]}
edges:
  - {from: b64, to: hexed}
`), 0o644))
	env := filepath.Join(dir, ".env")
	require.NoError(t, os.WriteFile(env, []byte("TOKEN="+secret+"\n"), 0o600))
	sk := filepath.Join(dir, ".skein")

	r := skein(t, "run", "--output", "json", "--dir", sk, "--secrets-file", env, flow)
	require.Equal(t, 0, r.code, r.stderr)
	forms := []string{secret, base64.StdEncoding.EncodeToString([]byte(secret)), hex.EncodeToString([]byte(secret))}
	for _, f := range forms {
		require.NotContains(t, r.stdout+r.stderr, f)
	}
	require.Contains(t, r.stdout, `"stdout": "***\n"`, "base64 output is masked")
	require.Contains(t, r.stdout, `"stdout": "***"`, "hex output is masked")

	require.NoError(t, filepath.WalkDir(sk, func(path string, d fs.DirEntry, err error) error {
		require.NoError(t, err)
		if d.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, f := range forms {
			require.False(t, strings.Contains(string(data), f), "%s holds the secret as %q", path, f)
		}
		return nil
	}))
}
