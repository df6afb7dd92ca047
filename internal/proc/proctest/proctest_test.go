package proctest_test

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/proc/proctest"
)

// TestSurvivors finds a tagged process while it lives, not once it ended,
// and not a process tagged otherwise.
func TestSurvivors(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	tag := "survivors-" + strconv.Itoa(os.Getpid())
	// It says it runs once it runs with its environment, and then reads
	// its input: the process stays as it is (a shell that went on to exec
	// another program could be in the middle of it when /proc is read,
	// its environment unreadable for that moment).
	cmd := exec.Command("sh", "-c", "echo ready; read line")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "PROCTEST_TAG=" + tag}
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	in, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer in.Close()
	require.NoError(t, cmd.Start())
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	require.Equal(t, []int{cmd.Process.Pid}, proctest.Survivors("PROCTEST_TAG", tag))
	require.Empty(t, proctest.Survivors("PROCTEST_TAG", tag+"x"), "a value is matched whole")
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()
	require.Empty(t, proctest.Survivors("PROCTEST_TAG", tag))
}
