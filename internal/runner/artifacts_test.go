package runner_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
)

// painter saves picture.png (and sub/deep.txt) in its artifacts folder.
type painter struct{}

func (painter) Run(_ context.Context, c *node.Call) (map[string]any, error) {
	if err := os.MkdirAll(filepath.Join(c.ArtifactDir, "sub"), 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(c.ArtifactDir, "picture.png"), []byte("not really a png"), 0o644); err != nil {
		return nil, err
	}
	return map[string]any{"ok": true}, os.WriteFile(filepath.Join(c.ArtifactDir, "sub", "deep.txt"), []byte("deep"), 0o644)
}

// A local run's artifacts are the files of its folder: Artifact reads them
// by name, and nothing outside the node's artifacts folder.
func TestArtifactOfALocalRun(t *testing.T) {
	t.Parallel()
	reg := node.NewRegistry()
	reg.MustRegister(node.Spec{Kind: "painter", Category: node.Action, Description: "Saves a picture."},
		func() node.Kind { return painter{} })
	dir := t.TempDir()
	r, err := runner.Open(runner.Config{Dir: filepath.Join(dir, ".skein"), Registry: reg})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, r.Close()) })
	file := filepath.Join(dir, "paint.yaml")
	require.NoError(t, os.WriteFile(file, []byte("version: 1\nname: paint\nnodes:\n  - {id: paint, type: painter}\n"), 0o644))
	w, err := r.Load(file)
	require.NoError(t, err)
	res, err := r.Start(t.Context(), runner.StartRequest{Workflow: w})
	require.NoError(t, err)
	require.NoError(t, res.Err)

	for name, want := range map[string]string{"picture.png": "not really a png", "sub/deep.txt": "deep"} {
		rc, size, err := r.Artifact(t.Context(), res.Run.ID, "paint", name)
		require.NoError(t, err, name)
		data, err := io.ReadAll(rc)
		require.NoError(t, rc.Close())
		require.NoError(t, err)
		require.Equal(t, want, string(data))
		require.EqualValues(t, len(want), size)
	}
	for _, name := range []string{"nothing.png", "../run.json", "/etc/passwd", ".", "sub"} {
		_, _, err := r.Artifact(t.Context(), res.Run.ID, "paint", name)
		require.ErrorIs(t, err, runner.ErrNoArtifact, name)
	}
	_, _, err = r.Artifact(t.Context(), "nope", "paint", "picture.png")
	require.ErrorIs(t, err, runner.ErrNotFound)
}

// --blobs names the shared store of workers on Postgres: on SQLite it is
// a usage error, not a setting silently ignored.
func TestSharedBlobsNeedPostgres(t *testing.T) {
	t.Parallel()
	_, err := runner.Open(runner.Config{Dir: filepath.Join(t.TempDir(), ".skein"), Blobs: t.TempDir()})
	var use *runner.UsageError
	require.ErrorAs(t, err, &use)
	require.Contains(t, use.Msg, "--blobs")
}
