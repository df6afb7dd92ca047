//go:build unix

package proc_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/proc"
)

// eventually fails the test unless cond holds within limit.
func eventually(t *testing.T, limit time.Duration, cond func() bool, msg string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf(msg, args...)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// groupCmd is a command started with the proc rules: a shell that starts a
// grandchild (sleep) and waits for it, both in the shell's group.
type groupCmd struct {
	cmd  *exec.Cmd
	tree *proc.Tree
	pids []int // the shell, then its grandchild
}

func startGroup(t *testing.T) *groupCmd {
	t.Helper()
	pidFile := filepath.Join(t.TempDir(), "pids")
	cmd := exec.Command("sh", "-c", `echo $$ > "$1.tmp"; sleep 30 & echo $! >> "$1.tmp"; mv "$1.tmp" "$1"; wait`, "sh", pidFile)
	tree, err := proc.Start(cmd)
	require.NoError(t, err)
	g := &groupCmd{cmd: cmd, tree: tree}
	t.Cleanup(func() {
		tree.Signal(syscall.SIGKILL)
		_ = tree.Wait()
	})
	eventually(t, 60*time.Second, func() bool { _, err := os.Stat(pidFile); return err == nil }, "the command did not write its pids")
	data, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	for _, l := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(l)
		require.NoError(t, err)
		g.pids = append(g.pids, pid)
	}
	require.Len(t, g.pids, 2)
	return g
}

func TestStartStartsAGroup(t *testing.T) {
	t.Parallel()
	g := startGroup(t)
	require.Equal(t, g.pids[0], g.tree.Pid(), "the tree's pid is the command's")
	require.Equal(t, g.tree.Pid(), g.tree.Group(), "the command leads the group")
	for _, pid := range g.pids {
		pgid, err := syscall.Getpgid(pid)
		require.NoError(t, err)
		require.Equal(t, g.tree.Pid(), pgid, "process %d is in the command's group", pid)
	}
	sid, err := syscall.Getpgid(g.cmd.Process.Pid)
	require.NoError(t, err)
	require.NotEqual(t, syscall.Getpgrp(), sid, "a terminal's Ctrl-C for Skein's group does not reach the command")
}

func TestKillGroup(t *testing.T) {
	t.Parallel()

	t.Run("a group the step started is killed, grandchildren too", func(t *testing.T) {
		t.Parallel()
		stepStarted := time.Now()
		g := startGroup(t)

		killed, err := proc.KillGroup(g.tree.Group(), stepStarted)
		require.NoError(t, err)
		require.True(t, killed)
		for _, pid := range g.pids {
			require.False(t, proc.Alive(pid), "process %d is gone when KillGroup returns", pid)
		}
		_ = g.tree.Wait()
		require.Equal(t, syscall.SIGKILL, g.cmd.ProcessState.Sys().(syscall.WaitStatus).Signal())
	})

	t.Run("a group older than the step is not touched", func(t *testing.T) {
		if !procfs() {
			t.Skip("start times are read from /proc")
		}
		t.Parallel()
		g := startGroup(t)

		// As if the group id had been recycled: its processes started
		// well before the step that recorded it.
		killed, err := proc.KillGroup(g.tree.Group(), time.Now().Add(5*time.Second))
		require.NoError(t, err)
		require.False(t, killed)
		for _, pid := range g.pids {
			require.True(t, proc.Alive(pid), "process %d of an unrelated group was left alone", pid)
		}
	})

	t.Run("a group that is gone", func(t *testing.T) {
		t.Parallel()
		tree, err := proc.Start(exec.Command("true"))
		require.NoError(t, err)
		require.NoError(t, tree.Wait())
		killed, err := proc.KillGroup(tree.Group(), time.Now().Add(-time.Minute))
		require.NoError(t, err)
		require.False(t, killed)
	})

	t.Run("Skein's own group is never killed", func(t *testing.T) {
		t.Parallel()
		killed, err := proc.KillGroup(syscall.Getpgrp(), time.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.False(t, killed)
	})

	t.Run("not a group", func(t *testing.T) {
		t.Parallel()
		for _, pgid := range []int{-5, 0, 1} {
			killed, err := proc.KillGroup(pgid, time.Now())
			require.Error(t, err, "pgid %d", pgid)
			require.False(t, killed)
		}
	})
}

// procfs reports whether /proc describes processes here.
func procfs() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}
