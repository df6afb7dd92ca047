package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/proc/proctest"
)

// TestKilledRunLeavesNoProcess kills `skein run` with SIGKILL while a shell
// node runs a command that would write a file two minutes later, from a process
// below the command: the command's whole group dies with skein (the
// guardian kills it). Once no process of the node is left, none can write
// the file any more: it is never written.
func TestKilledRunLeavesNoProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string // writes $1/started first
	}{
		{"foreground", `echo $PPID > "$1/started"; sleep 120; touch "$1/x"`},
		{"background", `echo $PPID > "$1/started"; (sleep 120; touch "$1/y") &`},
		{"background, waited for", `echo $PPID > "$1/started"; (sleep 120; touch "$1/y") & wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := strconv.Itoa(os.Getpid()) + "-" + t.Name()
			cmd, _, _ := started(t, "run", "--dir", dir, "testdata/tree.yaml",
				"-i", "script="+tt.script, "-i", "dir="+dir, "-i", "marker="+marker)
			eventually(t, 30*time.Second, func() bool {
				data, err := os.ReadFile(filepath.Join(dir, "started"))
				return err == nil && bytes.HasSuffix(data, []byte("\n"))
			}, "the node never started")

			_ = cmd.Process.Kill() // the node may have ended already (the background case)
			_ = cmd.Wait()
			eventually(t, 30*time.Second, func() bool { return len(proctest.Survivors("SKEIN_TEST_TREE", marker)) == 0 },
				"the node's processes outlived skein's SIGKILL: %v", proctest.Survivors("SKEIN_TEST_TREE", marker))
			for _, f := range []string{"x", "y"} {
				require.NoFileExists(t, filepath.Join(dir, f), "a process of the node outlived skein")
			}
		})
	}
}
