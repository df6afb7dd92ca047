package confine_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/confine"
)

type bundle struct {
	dir, outside, victim string
}

// setup makes a folder with a subfolder, a folder beside it holding a
// file that must never change, and symlinks inside that lead out.
func setup(t *testing.T) bundle {
	t.Helper()
	top := t.TempDir()
	b := bundle{dir: filepath.Join(top, "project"), outside: filepath.Join(top, "outside")}
	b.victim = filepath.Join(b.outside, "victim.txt")
	require.NoError(t, os.MkdirAll(filepath.Join(b.dir, "sub"), 0o755))
	require.NoError(t, os.MkdirAll(b.outside, 0o755))
	require.NoError(t, os.WriteFile(b.victim, []byte("keep me"), 0o644))
	require.NoError(t, os.Symlink(b.victim, filepath.Join(b.dir, "link.txt")))
	require.NoError(t, os.Symlink(b.outside, filepath.Join(b.dir, "outdir")))
	require.NoError(t, os.Symlink(filepath.Join(b.outside, "new.txt"), filepath.Join(b.dir, "dangling.txt")))
	require.NoError(t, os.Symlink("../../outside/rel.txt", filepath.Join(b.dir, "sub", "relative-dangling.txt")))
	return b
}

func TestResolveAndWriteFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    func(b bundle) string
		escapes bool
		symlink bool // the message says a symlink leads out
	}{
		{name: "a file in the folder", path: func(bundle) string { return "a.txt" }},
		{name: "a new file in a new subfolder", path: func(bundle) string { return "sub/deeper/a.txt" }},
		{name: "dot-dot that stays inside", path: func(bundle) string { return "sub/../b.txt" }},
		{name: "absolute inside", path: func(b bundle) string { return filepath.Join(b.dir, "sub", "c.txt") }},
		{name: "dot-dot out", path: func(bundle) string { return "../outside/victim.txt" }, escapes: true},
		{name: "dot-dot out to a new file", path: func(bundle) string { return "sub/../../outside/made.txt" }, escapes: true},
		{name: "absolute outside", path: func(b bundle) string { return b.victim }, escapes: true},
		{name: "a symlink inside that leads out", path: func(bundle) string { return "link.txt" }, escapes: true, symlink: true},
		{name: "through a symlinked folder", path: func(bundle) string { return "outdir/victim.txt" }, escapes: true, symlink: true},
		{name: "a new file through a symlinked folder", path: func(bundle) string { return "outdir/x/made.txt" }, escapes: true, symlink: true},
		{name: "a dangling symlink that leads out", path: func(bundle) string { return "dangling.txt" }, escapes: true, symlink: true},
		{name: "a relative dangling symlink that leads out", path: func(bundle) string { return "sub/relative-dangling.txt" }, escapes: true, symlink: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			name := tc.path(b)
			real, err := confine.Resolve(name, b.dir)
			werr := confine.WriteFile(name, []byte("written"), 0o644, b.dir)
			if !tc.escapes {
				require.NoError(t, err)
				require.NoError(t, werr)
				require.True(t, confine.Within(b.dir, real), "%s is inside %s", real, b.dir)
				got, err := os.ReadFile(real)
				require.NoError(t, err)
				require.Equal(t, "written", string(got))
				return
			}
			for _, err := range []error{err, werr} {
				var esc *confine.EscapeError
				require.True(t, errors.As(err, &esc), "refused as an escape, got %v", err)
				require.ErrorIs(t, err, confine.ErrEscapes)
				require.Contains(t, err.Error(), "outside "+b.dir)
				require.Equal(t, tc.symlink, esc.Symlink, err.Error())
			}
			got, err := os.ReadFile(b.victim)
			require.NoError(t, err)
			require.Equal(t, "keep me", string(got), "the file outside is unchanged")
			entries, err := os.ReadDir(b.outside)
			require.NoError(t, err)
			require.Len(t, entries, 1, "nothing is made outside")
		})
	}
}

// TestResolveInADeclaredFolder: a path outside the first folder is
// allowed inside another one given.
func TestResolveInADeclaredFolder(t *testing.T) {
	t.Parallel()
	b := setup(t)
	real, err := confine.Resolve("../outside/victim.txt", b.dir, b.outside)
	require.NoError(t, err)
	require.Equal(t, b.victim, real)
}
