package flowtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/flowtest"
	"github.com/skeinhq/skein/node"
)

// rolled runs a command that leaves a marker and prints a random number.
const rolled = `version: 1
name: rolled
inputs:
  marker: {type: string}
nodes:
  - id: roll
    type: shell
    command: [sh, -c, 'touch "$0"; od -An -N4 -tu4 /dev/urandom | tr -d " "', "{{ inputs.marker }}"]
outputs:
  n: "{{ trim(roll.stdout) }}"
`

// TestCassetteCases: --update (Options.Update) records a case's cassette
// live; without it the case answers from the cassette and runs nothing;
// a changed request fails the case with the difference.
func TestCassetteCases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	marker := filepath.Join(dir, "ran")
	flowFile := filepath.Join(dir, "rolled.yaml")
	require.NoError(t, os.WriteFile(flowFile, []byte(rolled), 0o644))
	test := filepath.Join(dir, "rolled.test.yaml")
	require.NoError(t, os.WriteFile(test, []byte(`cases:
  - name: rolls
    inputs: {marker: `+marker+`}
    cassette: cassettes/rolled.jsonl
    expect: {status: completed}
`), 0o644))
	run := func(update bool) *flowtest.Report {
		f, err := flowtest.Load(test, node.Default)
		require.NoError(t, err)
		return flowtest.Run(t.Context(), []*flowtest.File{f}, flowtest.Options{Update: update})
	}

	rep := run(false)
	require.Equal(t, 1, rep.Failed, "no cassette yet")
	require.Contains(t, rep.Cases[0].Error, "record it with skein test --update")

	rep = run(true)
	require.Equal(t, 1, rep.Passed, "%+v", rep.Cases)
	require.FileExists(t, filepath.Join(dir, "cassettes", "rolled.jsonl"))
	require.FileExists(t, marker, "recorded live")
	require.NoError(t, os.Remove(marker))

	rep = run(false)
	require.Equal(t, 1, rep.Passed, "%+v", rep.Cases)
	require.NoFileExists(t, marker, "a replay runs no command")

	// The command changed: the case fails with how.
	require.NoError(t, os.WriteFile(flowFile, []byte(strings.Replace(rolled, "-N4", "-N8", 1)), 0o644))
	rep = run(false)
	require.Equal(t, 1, rep.Failed)
	var problems []string
	for _, m := range rep.Cases[0].Mismatches {
		problems = append(problems, m.String())
	}
	require.Contains(t, strings.Join(problems, "\n"), `cassette: node roll (visit 1, attempt 1) made a shell request that differs from the recorded one:
  argv[2]: recorded "touch \"$0\"; od -An -N4`)
	require.NoFileExists(t, marker)
}

// TestUpdateKeepsAGoodCassette: --update rewrites a cassette only when the
// live run meets the case.
func TestUpdateKeepsAGoodCassette(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "rolled.yaml"), []byte(rolled), 0o644))
	test := filepath.Join(dir, "rolled.test.yaml")
	require.NoError(t, os.WriteFile(test, []byte(`cases:
  - name: wants a word
    inputs: {marker: `+filepath.Join(dir, "ran")+`}
    cassette: rolled.jsonl
    expect: {outputs: {n: "not a number"}}
`), 0o644))
	good := "{\"cassette\":1,\"workflow\":\"rolled\"}\n"
	tape := filepath.Join(dir, "rolled.jsonl")
	require.NoError(t, os.WriteFile(tape, []byte(good), 0o644))
	f, err := flowtest.Load(test, node.Default)
	require.NoError(t, err)
	rep := flowtest.Run(t.Context(), []*flowtest.File{f}, flowtest.Options{Update: true})
	require.Equal(t, 1, rep.Failed)
	require.Contains(t, rep.Cases[0].Error, "was left as it was: the live run did not meet the case")
	got, err := os.ReadFile(tape)
	require.NoError(t, err)
	require.Equal(t, good, string(got))
}
