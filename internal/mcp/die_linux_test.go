package mcp_test

import (
	"bufio"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/proc/proctest"
)

// A stdio server dies with the Skein that started it, with every process
// it started, even when Skein is killed with SIGKILL and cannot stop it,
// and even when the server would outlive the end of its stdin. It leads a
// process group of its own.
func TestServerDiesWithSkein(t *testing.T) {
	t.Parallel()
	p := servers(t)
	marker := newMarker(t)
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"="+p.node, faultyEnv+"="+p.faulty, markerVar+"="+marker)
	helper.Stderr = os.Stderr
	stdin, err := helper.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	t.Cleanup(func() {
		_ = helper.Process.Kill()
		_ = helper.Wait()
		if t.Failed() {
			for _, pid := range proctest.Survivors(markerVar, marker) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the helper prints the server's pid")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	require.Contains(t, proctest.Survivors(markerVar, marker), pid, "the server runs while Skein does")
	pgid, err := syscall.Getpgid(pid)
	require.NoError(t, err)
	require.Equal(t, pid, pgid, "the server leads its own process group")

	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	deadline := time.Now().Add(60 * time.Second)
	for len(proctest.Survivors(markerVar, marker)) > 0 {
		require.True(t, time.Now().Before(deadline), "the server outlived Skein's SIGKILL: %v", proctest.Survivors(markerVar, marker))
		time.Sleep(10 * time.Millisecond)
	}
}
