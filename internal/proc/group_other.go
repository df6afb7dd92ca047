//go:build !unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Apply does nothing where process groups are not available: a child is
// not stopped when Skein dies, and its children are not reached.
func Apply(*exec.Cmd) {}

// Group is 0: there are no process groups here.
func Group(*os.Process) int { return 0 }

// SignalGroup stops the process itself on SIGKILL: without process groups
// its children are not reached, and other signals are not delivered.
func SignalGroup(p *os.Process, sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = p.Kill()
	}
}

// AwaitGroup has no group to wait for here.
func AwaitGroup(*os.Process, time.Duration) {}

// KillGroup kills nothing and reports false: there are no process groups
// here, so none was recorded.
func KillGroup(int, time.Time) (bool, error) { return false, nil }
