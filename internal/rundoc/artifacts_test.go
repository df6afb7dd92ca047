package rundoc_test

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/rundoc"
)

// A local run's artifact is read from its node's artifacts folder, and no
// name leads out of it.
func TestOpenArtifactOfALocalRun(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "a", "artifacts", "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "artifacts", "sub", "r.txt"), []byte("report"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a", "secret.txt"), []byte("no"), 0o644))
	run := &record.Run{ID: "r1", Dir: dir}
	steps := []*record.Step{{Node: "a", Visit: 1}}
	none := func(*record.Step) map[string]any { return nil }

	rc, size, err := rundoc.OpenArtifact(run, steps, "a", "sub/r.txt", none)
	require.NoError(t, err)
	data, err := io.ReadAll(rc)
	require.NoError(t, rc.Close())
	require.NoError(t, err)
	require.Equal(t, "report", string(data))
	require.EqualValues(t, 6, size)

	for _, name := range []string{"../secret.txt", ".", "sub", "missing.txt", "/etc/passwd"} {
		_, _, err := rundoc.OpenArtifact(run, steps, "a", name, none)
		require.ErrorIs(t, err, rundoc.ErrNoArtifact, name)
	}
}
