package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// initAllocBudget is the most allocations a Skein package may make while
// it initialises. Registering node kinds and declaring small lists fits;
// compiling regexps (a `{1,64}` alone cost ~850 allocations), building
// price tables or expression environments does not: they are built on
// first use, so a command pays only for what it uses.
const initAllocBudget = 100

// TestVersionBuildsNothingItDoesNotUse runs `skein version` with the Go
// runtime's init trace and checks that no Skein package does more than
// declare itself at start: the repair loop's regexps, the model prices,
// the expression environment and the CLI's usage messages wait for the
// command that needs them.
func TestVersionBuildsNothingItDoesNotUse(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	require.Contains(t, stdout.String(), "skein")

	seen := 0
	for line := range strings.Lines(stderr.String()) {
		// init github.com/skeinhq/skein/expr @3.1 ms, 0.02 ms clock, 2344 bytes, 27 allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[10] != "allocs" {
			continue
		}
		pkg := f[1]
		if pkg != "github.com/skeinhq/skein" && !strings.HasPrefix(pkg, "github.com/skeinhq/skein/") {
			continue
		}
		seen++
		allocs, err := strconv.Atoi(f[9])
		require.NoError(t, err, line)
		require.LessOrEqual(t, allocs, initAllocBudget,
			"%s makes %d allocations while it initialises (budget %d): build its tables and regexps on first use (sync.OnceValue)", pkg, allocs, initAllocBudget)
	}
	require.NotZero(t, seen, "no init trace of a Skein package in:\n%s", stderr.String())
}

// initBytesBudget is the most bytes any package skein links, a library's
// too, may allocate while it initialises. santhosh-tekuri/jsonschema/v6
// compiled its five drafts' metaschemas in init (1.7 MB, 21,000
// allocations, 8–13 ms of every skein process); skein checks schemas with
// internal/jsonvalid over google/jsonschema-go instead.
const initBytesBudget = 256 << 10

// TestNoLibraryBuildsMuchAtStart runs `skein version` with the Go runtime's
// init trace and checks that no package, Skein's or a library's, allocates
// more than initBytesBudget while it initialises.
func TestNoLibraryBuildsMuchAtStart(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(bin, "version")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Run(), stderr.String())
	seen := 0
	for line := range strings.Lines(stderr.String()) {
		// init github.com/openai/openai-go/v3 @60 ms, 1.9 ms clock, 143360 bytes, 1057 allocs
		f := strings.Fields(line)
		if len(f) < 11 || f[0] != "init" || f[8] != "bytes," {
			continue
		}
		seen++
		n, err := strconv.Atoi(f[7])
		require.NoError(t, err, line)
		require.LessOrEqual(t, n, initBytesBudget, "%s allocates %d bytes while it initialises (budget %d)", f[1], n, initBytesBudget)
	}
	require.Greater(t, seen, 100, "the init trace lists every package with an init:\n%s", stderr.String())
}
