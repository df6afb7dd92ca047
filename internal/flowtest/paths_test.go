package flowtest_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/flowtest"
	"github.com/skeinhq/skein/node"
)

const victimText = "a file outside the project\n"

type pathsBundle struct {
	dir, outside, victim, test string
}

// pathsSetup makes a project folder with the rolled workflow, a folder
// beside it with a file that must never change, and symlinks inside that
// lead to it.
func pathsSetup(t *testing.T) pathsBundle {
	t.Helper()
	top := t.TempDir()
	b := pathsBundle{dir: filepath.Join(top, "project"), outside: filepath.Join(top, "outside")}
	b.victim = filepath.Join(b.outside, "victim.jsonl")
	b.test = filepath.Join(b.dir, "rolled.test.yaml")
	require.NoError(t, os.MkdirAll(b.dir, 0o755))
	require.NoError(t, os.MkdirAll(b.outside, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(b.dir, "rolled.yaml"), []byte(rolled), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(b.outside, "rolled.yaml"), []byte(rolled), 0o644))
	require.NoError(t, os.WriteFile(b.victim, []byte(victimText), 0o644))
	require.NoError(t, os.Symlink(b.victim, filepath.Join(b.dir, "link.jsonl")))
	require.NoError(t, os.Symlink(b.outside, filepath.Join(b.dir, "outdir")))
	require.NoError(t, os.Symlink(filepath.Join(b.outside, "rolled.yaml"), filepath.Join(b.dir, "linked.yaml")))
	return b
}

func (b pathsBundle) unchanged(t *testing.T) {
	t.Helper()
	got, err := os.ReadFile(b.victim)
	require.NoError(t, err)
	require.Equal(t, victimText, string(got), "the file outside is unchanged")
	entries, err := os.ReadDir(b.outside)
	require.NoError(t, err)
	require.Len(t, entries, 2, "nothing is made outside")
}

// The paths a test file names — its cases' cassettes, replayed or written
// by --update, and its workflow — must stay in its folder, symlinks
// resolved: `..`, an absolute path outside and a symlink inside that
// leads out are refused when the file is loaded, before any case runs
// (replayed or recorded by --update), at the line naming them, and nothing
// outside is written. A cassette in a subfolder still works.
func TestTestFilePathsStayInTheirFolder(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, key, path string
		line            int
	}{
		{name: "cassette through ..", key: "cassette", path: "../outside/victim.jsonl", line: 4},
		{name: "cassette at an absolute path outside", key: "cassette", path: "OUTSIDE/victim.jsonl", line: 4},
		{name: "cassette through a symlink", key: "cassette", path: "link.jsonl", line: 4},
		{name: "new cassette through a symlinked folder", key: "cassette", path: "outdir/new/made.jsonl", line: 4},
		{name: "workflow through ..", key: "workflow", path: "../outside/rolled.yaml", line: 1},
		{name: "workflow at an absolute path outside", key: "workflow", path: "OUTSIDE/rolled.yaml", line: 1},
		{name: "workflow through a symlink", key: "workflow", path: "linked.yaml", line: 1},
	} {
		{
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				b := pathsSetup(t)
				path := tc.path
				if len(path) > 7 && path[:7] == "OUTSIDE" {
					path = b.outside + path[7:]
				}
				src := "cases:\n  - name: rolls\n    inputs: {marker: " + filepath.Join(b.dir, "ran") + "}\n    cassette: cassettes/rolled.jsonl\n    expect: {status: completed}\n"
				if tc.key == "cassette" {
					src = "cases:\n  - name: rolls\n    inputs: {marker: " + filepath.Join(b.dir, "ran") + "}\n    cassette: " + path + "\n    expect: {status: completed}\n"
				} else {
					src = "workflow: " + path + "\n" + src
				}
				require.NoError(t, os.WriteFile(b.test, []byte(src), 0o644))
				f, err := flowtest.Load(b.test, node.Default)
				require.Nil(t, f)
				var fe *flowtest.Error
				require.True(t, errors.As(err, &fe), "a test file error, got %v", err)
				require.Equal(t, b.test, fe.File)
				require.Equal(t, tc.line, fe.Line, err.Error())
				require.Contains(t, err.Error(), tc.key+": ")
				require.Contains(t, err.Error(), "outside "+b.dir+", the folder of the test file")
				require.NoFileExists(t, filepath.Join(b.dir, "ran"), "nothing ran")
				b.unchanged(t)
			})
		}
	}
}

// A cassette's folder swapped for a symlink that leads out after the test
// file was loaded is refused when the case runs: replayed or recorded by
// --update, with the test file's line, and the file outside is unchanged.
// Before the swap, --update writes the cassette in its subfolder.
func TestCassetteSymlinkedAfterLoad(t *testing.T) {
	t.Parallel()
	b := pathsSetup(t)
	require.NoError(t, os.WriteFile(b.test, []byte("cases:\n  - name: rolls\n    inputs: {marker: "+filepath.Join(b.dir, "ran")+"}\n    cassette: testdata/cassettes/victim.jsonl\n    expect: {status: completed}\n"), 0o644))
	f, err := flowtest.Load(b.test, node.Default)
	require.NoError(t, err)
	rep := flowtest.Run(t.Context(), []*flowtest.File{f}, flowtest.Options{Update: true})
	require.Equal(t, 1, rep.Passed, "%+v", rep.Cases)
	require.FileExists(t, filepath.Join(b.dir, "testdata", "cassettes", "victim.jsonl"), "a cassette in a subfolder is written")
	require.NoError(t, os.Remove(filepath.Join(b.dir, "ran")))

	require.NoError(t, os.RemoveAll(filepath.Join(b.dir, "testdata")))
	require.NoError(t, os.Symlink(b.outside, filepath.Join(b.dir, "testdata")))
	require.NoError(t, os.Mkdir(filepath.Join(b.outside, "cassettes"), 0o755))
	require.NoError(t, os.Symlink(b.victim, filepath.Join(b.outside, "cassettes", "victim.jsonl")))
	for _, update := range []bool{true, false} {
		rep := flowtest.Run(t.Context(), []*flowtest.File{f}, flowtest.Options{Update: update})
		require.Equal(t, 1, rep.Failed, "update=%v", update)
		msg := rep.Cases[0].Error
		require.Contains(t, msg, b.test+`:4: case "rolls": cassette: "testdata/cassettes/victim.jsonl" leads through a symlink to `+b.victim)
		require.Contains(t, msg, "move the cassette into "+b.dir)
		require.NoFileExists(t, filepath.Join(b.dir, "ran"), "the case did not run")
		got, err := os.ReadFile(b.victim)
		require.NoError(t, err)
		require.Equal(t, victimText, string(got), "the file outside is unchanged")
	}
}
