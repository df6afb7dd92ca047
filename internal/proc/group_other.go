//go:build !unix

package proc

import (
	"os/exec"
	"syscall"
	"time"
)

// apply does nothing where process groups are not available: a child is
// not stopped when Skein dies, and its children are not reached.
func apply(*exec.Cmd) {}

// Group is 0: there are no process groups here.
func (t *Tree) Group() int { return 0 }

// Signal stops the process itself on SIGKILL: without process groups its
// children are not reached, and other signals are not delivered.
func (t *Tree) Signal(sig syscall.Signal) {
	if sig == syscall.SIGKILL {
		_ = t.cmd.Process.Kill()
	}
}

// Await has no group to wait for here.
func (t *Tree) Await(time.Duration) {}

// KillGroup kills nothing and reports false: there are no process groups
// here, so none was recorded.
func KillGroup(int, time.Time) (bool, error) { return false, nil }
