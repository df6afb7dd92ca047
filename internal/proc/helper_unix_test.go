//go:build unix

package proc_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"

	"github.com/skeinhq/skein/internal/proc"
)

// scriptEnv is the script a helper runs with sh -c; tagEnv is the value of
// markerEnv, which tags every process of its tree (see survivors) but not
// the helper itself.
const (
	scriptEnv = "SKEIN_PROC_TEST_SCRIPT"
	tagEnv    = "SKEIN_PROC_TEST_TAG"
	markerEnv = "SKEIN_PROC_TEST_MARKER"
)

// beforeHelperStart, when set (on Linux), readies the helper before it
// starts its command.
var beforeHelperStart func()

// runHelper stands in for Skein: it starts the script of scriptEnv with the
// proc rules (its first argument is the helper's own first argument),
// prints the command's pid, and waits
// until its stdin closes (or it is killed).
func runHelper() {
	if beforeHelperStart != nil {
		beforeHelperStart()
	}
	cmd := exec.Command("sh", "-c", os.Getenv(scriptEnv), "sh", os.Getenv(helperEnv))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), markerEnv + "=" + os.Getenv(tagEnv)}
	tree, err := proc.Start(cmd)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	fmt.Println(tree.Pid())
	_, _ = io.Copy(io.Discard, os.Stdin)
	tree.Signal(9)
	_ = tree.Wait()
	os.Exit(0)
}
