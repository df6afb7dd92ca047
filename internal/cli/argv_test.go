package cli_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValidateWarnsTemplatedOptions: skein validate points at each templated
// argv element a program could read as an option, as a warning, and the
// workflow stays valid.
func TestValidateWarnsTemplatedOptions(t *testing.T) {
	t.Parallel()
	file := writeFile(t, "clone.yaml", `version: 1
name: clone
inputs:
  repo: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - id: exposed
    type: shell
    command: [git, clone, "{{ inputs.repo }}"]
  - id: ended
    type: shell
    command: [git, clone, --, "{{ inputs.repo }}"]
  - id: allowed
    type: shell
    command: [git, "{{ inputs.repo }}"]
    allow_option_args: true
  - id: attached
    type: shell
    command: [git, "--branch={{ inputs.repo }}", "./{{ inputs.repo }}"]
  - id: script
    type: shell
    shell: true
    command: ['git clone -- "$1"', "{{ inputs.repo }}"]
edges:
  - {from: start, to: exposed}
  - {from: exposed, to: ended}
  - {from: ended, to: allowed}
  - {from: allowed, to: attached}
  - {from: attached, to: script}
`)
	r := skein(t, "validate", file)
	require.Equal(t, 0, r.code, "warnings leave the workflow valid:\n%s%s", r.stdout, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 2, "one warning, then the verdict:\n%s", r.stdout)
	require.True(t, strings.HasPrefix(lines[0], file+":9:27: warning: argument 2 of command comes from a template"), lines[0])
	require.Contains(t, lines[0], `put a literal "--" element before it`)
	require.Contains(t, lines[0], "allow_option_args: true")
	require.True(t, strings.HasSuffix(lines[0], "(node exposed)"), lines[0])
	require.Equal(t, "1 workflow valid", lines[1])
}

// TestRunRefusesTemplatedOption is the injection of the issue through
// skein run: git clone with a repository input that is an option running a
// command. The node fails and the command does not run.
func TestRunRefusesTemplatedOption(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src := t.TempDir()
	require.NoError(t, exec.Command("git", "init", "-q", src).Run())
	work := t.TempDir()
	marker := filepath.Join(work, "pwned")
	file := writeFile(t, "clone.yaml", `version: 1
name: clone
inputs:
  repo: {type: string}
  dest: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - id: clone
    type: shell
    command: [git, clone, "{{ inputs.repo }}", "{{ inputs.dest }}"]
    cwd: `+work+`
edges:
  - {from: start, to: clone}
`)
	r, m := runJSON(t, file, "-i", "repo=--upload-pack=touch "+marker+"; false", "-i", "dest=file://"+src)
	require.Equal(t, 1, r.code, r.stderr)
	require.Equal(t, "failed", m["status"])
	msg := m["error"].(map[string]any)["message"].(string)
	require.Contains(t, msg, "node clone: argument 2 of command came from a template")
	require.NoFileExists(t, marker, "the injected command must not run")

	r, m = runJSON(t, file, "-i", "repo=file://"+src, "-i", "dest=copy")
	require.Equal(t, 0, r.code, r.stderr)
	require.Equal(t, "completed", m["status"], "a repository that is not an option clones")
	require.DirExists(t, filepath.Join(work, "copy", ".git"))
}
