package main_test

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// runIn runs skein with args in the folder dir ("": this process's).
func runIn(t *testing.T, dir string, args ...string) proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return proc{code, out.String(), errb.String()}
}

// TestARelativeDirHoldsFromAnyFolder: a run started with a relative
// --dir records its folder so that commands started from another folder
// find it: a resume goes on in the run's own folder (it made a second
// one under the folder it was started from), and prune deletes the
// folder with the run (it left it).
func TestARelativeDirHoldsFromAnyFolder(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	here, there := filepath.Join(root, "here"), filepath.Join(root, "there")
	require.NoError(t, os.MkdirAll(here, 0o755))
	require.NoError(t, os.MkdirAll(there, 0o755))
	gate := filepath.Join(root, "open")
	require.NoError(t, os.WriteFile(filepath.Join(here, "gated.yaml"), []byte(`version: 1
name: gated
nodes:
  - {id: gate, type: shell, command: [test, -f, "`+gate+`"]}
`), 0o644))

	p := runIn(t, here, "run", "--dir", "store", "--output", "json", "gated.yaml")
	require.Equal(t, 1, p.code, p.stderr)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(p.stdout), &doc))
	id, folder := doc["execution_id"].(string), doc["dir"].(string)
	require.True(t, filepath.IsAbs(folder), "the run's folder is recorded whole: %s", folder)
	require.DirExists(t, folder)
	show := runIn(t, here, "runs", "show", "--dir", "store", id)
	require.Equal(t, 0, show.code, show.stderr)
	require.Contains(t, show.stdout, "\nfolder store/runs/gated/", "shown from inside the working folder")

	store := filepath.Join(here, "store")
	require.NoError(t, os.WriteFile(gate, nil, 0o644))
	p = runIn(t, there, "resume", "--dir", "../here/store", "--output", "json", id)
	require.Equal(t, 0, p.code, p.stderr)
	require.NoError(t, json.Unmarshal([]byte(p.stdout), &doc))
	require.Equal(t, "completed", doc["status"])
	require.Equal(t, folder, doc["dir"], "the resume goes on in the run's folder")
	entries, err := os.ReadDir(there)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing made in the folder the resume was started from")

	p = runIn(t, there, "runs", "prune", "--dir", store, "--older-than", "1ms")
	require.Equal(t, 0, p.code, p.stderr)
	require.Contains(t, p.stdout, "1 run folders")
	require.NoDirExists(t, folder)
}
