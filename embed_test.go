package skein_test

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestEmbeddingProgram builds a program in a module of its own that
// requires this one (through a replace directive, as a program that
// vendors a checkout would), so it can reach public packages only — the
// compiler refuses an internal import across modules. The program runs a
// workflow whose node fails, resumes it once fixed, and cancels a run
// whose node is running; the test checks what it prints. The complete
// program of docs/library.md is built with it. The build uses
// the module cache the main build filled: -mod=mod with this module's
// go.sum, no other download.
func TestEmbeddingProgram(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	mod := t.TempDir()

	src, err := os.ReadFile("testdata/embed/main.go")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "main.go"), src, 0o644))
	goMod := "module example.com/embedder\n\ngo " + goVersion(t) + "\n\n" +
		"require github.com/skeinhq/skein v0.0.0\n\n" +
		"replace github.com/skeinhq/skein => " + root + "\n"
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.mod"), []byte(goMod), 0o644))
	sum, err := os.ReadFile("go.sum")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(mod, "go.sum"), sum, 0o644))

	// The complete program of docs/library.md is built beside it, so the
	// documentation cannot drift from the API.
	doc := docProgram(t, "docs/library.md")
	require.NoError(t, os.MkdirAll(filepath.Join(mod, "docprogram"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mod, "docprogram", "main.go"), []byte(doc), 0o644))

	bins := t.TempDir()
	bin := filepath.Join(bins, "embedder")
	build := exec.Command("go", "build", "-o", bins+string(filepath.Separator), "./...")
	build.Dir = mod
	build.Env = append(os.Environ(), "GOFLAGS="+goFlags(t), "GOWORK=off")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "building the embedding program:\n%s", out)

	work := t.TempDir()
	run := exec.Command(bin, work)
	out, err = run.CombinedOutput()
	require.NoError(t, err, "the embedding program failed:\n%s", out)
	require.Equal(t, `run: failed not_ready
resume: completed true 2 the service ready
  start success reused=false
  prepare success reused=true
  work success reused=false
  done success reused=false
resume again: refused, the run completed
  event: node_finished work failed
  event: node_finished work success
cancel: cancelled true
  start success 
  hold cancelled 
  after cancelled 
get: cancelled
list: slow cancelled
list: embedded completed
`, string(out))
}

// docProgram is the Go block of a markdown file that is a whole program
// (it begins with package main).
func docProgram(t *testing.T, file string) string {
	src, err := os.ReadFile(file)
	require.NoError(t, err)
	for _, block := range strings.Split(string(src), "```go\n")[1:] {
		code, _, _ := strings.Cut(block, "```")
		if strings.HasPrefix(code, "package main\n") {
			return code
		}
	}
	t.Fatalf("%s has no Go block that begins with package main", file)
	return ""
}

// goVersion is the go directive of this module's go.mod.
func goVersion(t *testing.T) string {
	f, err := os.Open("go.mod")
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "go "); ok {
			return strings.TrimSpace(v)
		}
	}
	require.NoError(t, sc.Err())
	t.Fatal("go.mod has no go directive")
	return ""
}

// goFlags are the go command's GOFLAGS (from the environment or go env
// -w) with -mod=mod: the program's go.mod lists only this module, and the
// go command completes it from this module's requirements, found in the
// module cache.
func goFlags(t *testing.T) string {
	out, err := exec.Command("go", "env", "GOFLAGS").Output()
	require.NoError(t, err)
	flags := []string{"-mod=mod"}
	for _, f := range strings.Fields(string(out)) {
		if !strings.HasPrefix(f, "-mod=") {
			flags = append(flags, f)
		}
	}
	return strings.Join(flags, " ")
}
