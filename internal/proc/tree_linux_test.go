package proc_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
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
	"github.com/skeinhq/skein/internal/proc/proctest"
)

// helper is the test binary standing in for Skein, running one script
// under the proc rules.
type helper struct {
	cmd     *exec.Cmd
	command int // the command
	marker  string
}

// holdEnv, set in a helper's environment, makes it stop between its
// command's start and the registration of the command's group, once it
// printed the command's pid.
const holdEnv = "SKEIN_PROC_TEST_HOLD"

func init() {
	beforeHelperStart = func() {
		if os.Getenv(holdEnv) != "" {
			proc.HoldAfterStart(func(pid int) {
				fmt.Println(pid)
				select {}
			})
		}
	}
}

// startHelper starts a helper running script with dir as $1 (and env in
// its environment), and returns once the command started.
func startHelper(t *testing.T, script, dir string, env ...string) *helper {
	t.Helper()
	h := &helper{marker: strconv.Itoa(os.Getpid()) + "-" + t.Name()}
	h.cmd = exec.Command(os.Args[0], "-test.run=^$")
	h.cmd.Env = append(append(os.Environ(), helperEnv+"="+dir, scriptEnv+"="+script, tagEnv+"="+h.marker), env...)
	h.cmd.Stderr = os.Stderr
	stdin, err := h.cmd.StdinPipe()
	require.NoError(t, err)
	t.Cleanup(func() { stdin.Close() })
	stdout, err := h.cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, h.cmd.Start())
	t.Cleanup(func() {
		_ = h.cmd.Process.Kill()
		_ = h.cmd.Wait()
		if t.Failed() { // leave no sleep behind
			for _, pid := range proctest.Survivors(markerEnv, h.marker) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the helper prints the pids")
	h.command, err = strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	return h
}

// A command's whole tree dies with the process that started it, even when
// that process is killed with SIGKILL and cannot stop it: the command, what
// it runs in the foreground and what it runs in the background (a process
// that starts its own session with setsid is not followed), and when it is
// killed before it registered the command's group. Once no process of the tree is left, none can
// write the file any more: it is never written.
func TestTreeDiesWithSkein(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		script string // writes "started" in $1 once the tree is there, and "late" 5 s later
		env    []string
	}{
		{"grandchild in the foreground", `touch "$1/started"; sh -c 'sleep 5; touch "$1/late"' sh "$1"`, nil},
		{"grandchild in the background", `(sleep 5; touch "$1/late") & touch "$1/started"; wait`, nil},
		{"orphan in the background", `(sleep 5; touch "$1/late") & touch "$1/started"`, nil},
		// Its owner killed after the command started but before its group
		// was registered with the guardian (a Skein that a loaded machine
		// did not schedule again in between): the guardian finds the
		// command by the tag Start put in its environment.
		{"owner killed before the group is registered", `(sleep 5; touch "$1/late") & touch "$1/started"; wait`, []string{holdEnv + "=1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			h := startHelper(t, tt.script, dir, tt.env...)
			eventually(t, 30*time.Second, func() bool { _, err := os.Stat(filepath.Join(dir, "started")); return err == nil },
				"the command never started")

			require.NoError(t, h.cmd.Process.Kill())
			_ = h.cmd.Wait()
			eventually(t, 30*time.Second, func() bool { return len(proctest.Survivors(markerEnv, h.marker)) == 0 && !proc.Alive(h.command) },
				"the tree outlived its owner's SIGKILL: %v", proctest.Survivors(markerEnv, h.marker))
			require.NoFileExists(t, filepath.Join(dir, "late"), "a process of the tree outlived its owner")
		})
	}
}

// What a command leaves running in its group when it exits is killed with
// it: once Wait returns, every process of its group got SIGKILL (the
// kernel may take a moment to end them on a loaded machine).
func TestTreeEndsWithTheCommand(t *testing.T) {
	t.Parallel()
	marker := "ends-" + strconv.Itoa(os.Getpid())
	// The sleeps do not hold stdout: Wait does not wait for them.
	cmd := exec.Command("sh", "-c", `echo ok; exec >/dev/null 2>&1; (sleep 30 &); sleep 30 &`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), markerEnv + "=" + marker}
	var out bytes.Buffer
	cmd.Stdout = &out
	tree, err := proc.Start(cmd)
	require.NoError(t, err)
	t.Cleanup(func() {
		for _, pid := range proctest.Survivors(markerEnv, marker) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	require.NoError(t, tree.Wait())
	require.Equal(t, "ok\n", out.String())
	eventually(t, 30*time.Second, func() bool { return len(proctest.Survivors(markerEnv, marker)) == 0 },
		"processes the command left are killed when it exits: %v", proctest.Survivors(markerEnv, marker))
}

// Wait gives the command's exit status: its exit code, or the signal that
// killed it.
func TestExitStatusIsRelayed(t *testing.T) {
	t.Parallel()
	tests := []struct {
		script string
		code   int
		signal syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"exit 255", 255, 0},
		{"kill -TERM $$", -1, syscall.SIGTERM},
		{"kill -KILL $$", -1, syscall.SIGKILL},
		{"kill -QUIT $$", -1, syscall.SIGQUIT},
		{"kill -SEGV $$", -1, syscall.SIGSEGV},
		{"kill -PIPE $$", -1, syscall.SIGPIPE},
		{"kill -USR1 $$", -1, syscall.SIGUSR1},
	}
	for _, tt := range tests {
		t.Run(tt.script, func(t *testing.T) {
			t.Parallel()
			cmd := exec.Command("sh", "-c", tt.script)
			tree, err := proc.Start(cmd)
			require.NoError(t, err)
			_ = tree.Wait()
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			require.Equal(t, tt.code, cmd.ProcessState.ExitCode())
			if tt.signal != 0 {
				require.True(t, ws.Signaled(), "%v", cmd.ProcessState)
				require.Equal(t, tt.signal, ws.Signal())
			}
		})
	}
}

// Standard streams, environment and folder are the command's; the
// guardian's own variable is not in its environment.
func TestCommandGetsItsStreams(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cmd := exec.Command("sh", "-c", `cat; pwd; env | sort; echo oops >&2`)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "FOO=b\xffr"}
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader("hello\n")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	tree, err := proc.Start(cmd)
	require.NoError(t, err)
	require.NoError(t, tree.Wait())
	real, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	require.Equal(t, "hello", lines[0])
	require.Contains(t, []string{dir, real}, lines[1])
	require.Contains(t, lines, "FOO=b\xffr", "a variable's bytes are kept")
	require.NotContains(t, out.String(), "SKEIN_PROC_GUARDIAN")
	require.Equal(t, "oops\n", errOut.String())
}

// A program that cannot be executed fails Start as it fails exec.Cmd.Start.
func TestStartFailsAsExecDoes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage")
	require.NoError(t, os.WriteFile(garbage, []byte("\x00\x01\x02not a program"), 0o755))
	plain := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	tests := []struct {
		name string
		path string
		is   error
	}{
		{"missing", filepath.Join(dir, "missing"), fs.ErrNotExist},
		{"not executable", plain, fs.ErrPermission},
		{"not a program", garbage, syscall.ENOEXEC},
		{"a folder", dir, fs.ErrPermission},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := proc.Start(&exec.Cmd{Path: tt.path, Args: []string{tt.path}})
			require.ErrorIs(t, err, tt.is)
			direct := (&exec.Cmd{Path: tt.path, Args: []string{tt.path}}).Start()
			require.Equal(t, direct.Error(), err.Error())
			var pe *fs.PathError
			require.True(t, errors.As(err, &pe))
		})
	}
}

// A guardian someone killed is replaced by the next Start, which hands
// the new one every group still running: commands keep starting.
func TestANewGuardianWhenTheOldIsGone(t *testing.T) {
	first := exec.Command("sleep", "3600")
	tree, err := proc.Start(first)
	require.NoError(t, err)
	t.Cleanup(func() { tree.Signal(syscall.SIGKILL); _ = tree.Wait() })
	old := proc.GuardianPID()
	require.NotZero(t, old, "the first Start started a guardian")
	require.NoError(t, syscall.Kill(old, syscall.SIGKILL))
	eventually(t, time.Minute, func() bool { return !proc.Alive(old) }, "the guardian %d outlived SIGKILL", old)

	next, err := proc.Start(exec.Command("true"))
	require.NoError(t, err, "a command starts after its guardian was killed")
	require.NoError(t, next.Wait())
	now := proc.GuardianPID()
	require.NotEqual(t, old, now, "a new guardian took over")
	require.True(t, proc.Alive(now), "the new guardian runs")
}
