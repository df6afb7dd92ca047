package proc_test

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
)

// A child started with the proc rules dies when the process that started
// it is killed with SIGKILL, which it cannot catch.
func TestChildDiesWithParent(t *testing.T) {
	t.Parallel()
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), helperEnv+"=1")
	stdin, err := helper.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	stdout, err := helper.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, helper.Start())
	t.Cleanup(func() { _ = helper.Process.Kill(); _ = helper.Wait() })

	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(t, err, "the helper prints its child's pid")
	child, err := strconv.Atoi(strings.TrimSpace(line))
	require.NoError(t, err)
	t.Cleanup(func() {
		if t.Failed() {
			_ = syscall.Kill(child, syscall.SIGKILL) // leave no sleep behind
		}
	})
	require.True(t, alive(child), "the child runs while its parent does")

	require.NoError(t, helper.Process.Kill())
	_ = helper.Wait()
	eventually(t, 60*time.Second, func() bool { return !alive(child) }, "child %d outlived its parent's SIGKILL", child)
}
