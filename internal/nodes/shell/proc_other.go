//go:build !unix

package shell

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// newProcessGroup does nothing where process groups are not available.
func newProcessGroup(*exec.Cmd) {}

// signalGroup stops the process itself: without process groups its children
// are not reached.
func signalGroup(p *os.Process, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = p.Kill()
	}
}

// exitCode is the command's exit status.
func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }

// awaitGroup has no group to wait for here.
func awaitGroup(*os.Process, time.Duration) {}
