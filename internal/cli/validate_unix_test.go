//go:build unix

package cli_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidateAFolderWithAPipe: a named pipe among a folder's workflow
// files is reported (reading it would wait for a writer: validate hung);
// the folder's other files are checked as ever.
func TestValidateAFolderWithAPipe(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "pipe.yaml"), 0o600))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "ok.yaml"), []byte("version: 1\nname: ok\nnodes:\n  - {id: say, type: template, text: hi}\n"), 0o644))
	r := skein(t, "validate", dir)
	require.Equal(t, 2, r.code, "stdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
	require.Contains(t, r.stdout+r.stderr, filepath.Join(dir, "pipe.yaml")+" is not a file but a named pipe; name a workflow file")
	require.NotContains(t, r.stdout+r.stderr, "ok.yaml", "the folder's valid file is checked and valid")
}
