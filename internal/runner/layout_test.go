package runner_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const module = "github.com/skeinhq/skein/"

// imports lists, by file, what the non-test Go files under dir (relative
// to the module root; with its subdirectories when deep) import.
func imports(t *testing.T, dir string, deep bool) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..", dir)
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (!deep || d.Name() == "testdata" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			out[path] = append(out[path], p)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// TestFrontEndsReachRunsThroughTheRunner: the command line, the server,
// the MCP server, the test runner, the binary and the public package speak
// the runner and the record types; none reaches into the engine or a
// store (STYLE: data flows one way). Node kinds do not import the
// verification layer: checks judge kinds, not the other way round.
func TestFrontEndsReachRunsThroughTheRunner(t *testing.T) {
	t.Parallel()
	forbidden := []string{module + "internal/engine", module + "internal/store"}
	frontEnds := []string{"internal/cli", "internal/server", "internal/mcpserver", "internal/flowtest", "cmd/skein"}
	seen := 0
	for _, dir := range frontEnds {
		if _, err := os.Stat(filepath.Join("..", "..", dir)); os.IsNotExist(err) {
			continue
		}
		for file, imps := range imports(t, dir, true) {
			seen++
			for _, p := range imps {
				for _, f := range forbidden {
					require.False(t, p == f || strings.HasPrefix(p, f+"/"),
						"%s imports %s: a front end reaches runs through internal/runner and internal/record", file, p)
				}
			}
		}
	}
	require.Greater(t, seen, 20, "the front ends' files were found")
	// The public package, the module's root: its own files only.
	public := imports(t, ".", false)
	require.NotEmpty(t, public, "the public package's files were found")
	for file, imps := range public {
		for _, p := range imps {
			for _, f := range forbidden {
				require.False(t, p == f || strings.HasPrefix(p, f+"/"),
					"%s imports %s: the public package reaches runs through internal/runner and internal/record", file, p)
			}
		}
	}

	nodes := imports(t, "internal/nodes", true)
	require.NotEmpty(t, nodes)
	for file, imps := range nodes {
		for _, p := range imps {
			require.False(t, p == module+"internal/check" || strings.HasPrefix(p, module+"internal/check/"),
				"%s imports %s: a node kind does not import the verification layer", file, p)
		}
	}
}

// TestRecordIsALeaf: the record package imports nothing of the project but
// the public node package, so every layer may use it.
func TestRecordIsALeaf(t *testing.T) {
	t.Parallel()
	recs := imports(t, "internal/record", false)
	require.NotEmpty(t, recs)
	for file, imps := range recs {
		for _, p := range imps {
			if strings.HasPrefix(p, module) {
				require.Equal(t, module+"node", p, "%s imports %s: package record is a leaf", file, p)
			}
		}
	}
}

// TestRunnerIsSlim: the runner is the application layer only — what runs
// where, in which order, under which errors. Mechanics live in the
// packages beside it (durable, queue, delivery, repair, rundoc, …), so the
// runner stays at most 2,500 lines of non-test Go.
func TestRunnerIsSlim(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	require.NoError(t, err)
	lines := 0
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		lines += strings.Count(string(data), "\n")
	}
	require.Greater(t, lines, 0)
	require.LessOrEqual(t, lines, 2500, "internal/runner holds %d lines of non-test Go", lines)
}
