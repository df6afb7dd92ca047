package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestManPages: skein-man DIR writes a page per command from the same
// definitions as skein --help, and a <name> in a help text survives.
func TestManPages(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "man")
	require.NoError(t, write(dir))
	for _, page := range []string{"skein.1", "skein-run.1", "skein-runs-list.1", "skein-resume.1", "skein-completion-bash.1"} {
		require.FileExists(t, filepath.Join(dir, page))
	}
	run, err := os.ReadFile(filepath.Join(dir, "skein-run.1"))
	require.NoError(t, err)
	require.Contains(t, string(run), `.TH "SKEIN" "1"`)
	require.Contains(t, string(run), "skein-run - Run a workflow and show its progress")
	require.Contains(t, string(run), `\fB--concurrency\fP`)
	require.Contains(t, string(run), ".skein/runs/<workflow>/<time>_<id>/", "a <name> in help text survives")
}

// TestSkeinLinksNoManLibraries: the skein binary does not import the
// libraries the man pages are made with (their initialisation cost every
// skein process 2–6 ms on the build machine).
func TestSkeinLinksNoManLibraries(t *testing.T) {
	t.Parallel()
	out, err := exec.Command("go", "list", "-deps", "../skein").CombinedOutput()
	require.NoError(t, err, string(out))
	deps := strings.Fields(string(out))
	require.Contains(t, deps, "github.com/spf13/cobra", "go list lists skein's imports")
	for _, lib := range []string{"github.com/spf13/cobra/doc", "github.com/cpuguy83/go-md2man/v2/md2man", "github.com/russross/blackfriday/v2"} {
		require.NotContains(t, deps, lib)
	}
}
