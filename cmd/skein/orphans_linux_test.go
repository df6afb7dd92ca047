package main_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// treeOf lists the living processes whose environment holds
// SKEIN_TEST_TREE=marker: a shell node's whole tree, whatever its group or
// session.
func treeOf(marker string) []int {
	want := []byte("SKEIN_TEST_TREE=" + marker + "\x00")
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
		if err == nil && bytes.Contains(env, want) && alive(pid) {
			out = append(out, pid)
		}
	}
	return out
}

// TestKilledRunLeavesNoProcess kills `skein run` with SIGKILL while a shell
// node runs a command that would write a file 5 s later, from a process
// below the command: the whole tree dies with skein. The command's parent
// is its supervisor, which exits only once no process of the tree is left;
// once it is gone, the tree is empty, so the file is never written.
func TestKilledRunLeavesNoProcess(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string // writes its parent's pid to $1/started first
	}{
		{"foreground", `echo $PPID > "$1/started"; sleep 5; touch "$1/x"`},
		{"background", `echo $PPID > "$1/started"; (sleep 5; touch "$1/y") &`},
		{"background, waited for", `echo $PPID > "$1/started"; (sleep 5; touch "$1/y") & wait`},
		{"a session of its own", `echo $PPID > "$1/started"; setsid sh -c 'sleep 5; touch "$1/z"' sh "$1" & wait`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := strconv.Itoa(os.Getpid()) + "-" + t.Name()
			cmd, _, _ := started(t, "run", "--dir", dir, "testdata/tree.yaml",
				"-i", "script="+tt.script, "-i", "dir="+dir, "-i", "marker="+marker)
			var supervisor int
			eventually(t, 30*time.Second, func() bool {
				data, err := os.ReadFile(filepath.Join(dir, "started"))
				if err != nil || !bytes.HasSuffix(data, []byte("\n")) {
					return false
				}
				supervisor, err = strconv.Atoi(strings.TrimSpace(string(data)))
				return err == nil
			}, "the node never started")
			require.NotEqual(t, cmd.Process.Pid, supervisor, "the command runs under a supervisor, not skein itself")

			_ = cmd.Process.Kill() // the node may have ended already (the background case)
			_ = cmd.Wait()
			eventually(t, 30*time.Second, func() bool { return !alive(supervisor) },
				"the supervisor outlived skein's SIGKILL")
			require.Empty(t, treeOf(marker), "a process of the node outlived its supervisor")
			for _, f := range []string{"x", "y", "z"} {
				require.NoFileExists(t, filepath.Join(dir, f), "a process of the node outlived skein")
			}
		})
	}
}
