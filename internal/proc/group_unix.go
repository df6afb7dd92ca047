//go:build unix

package proc

import (
	"os/exec"
	"syscall"
	"time"
)

// apply sets the rules for a child process on cmd before it starts: it
// leads a process group of its own (Setpgid), so that stopping the group
// stops everything it started, and on Linux it gets SIGKILL when the
// thread that started it exits (Pdeathsig).
//
// Pdeathsig only reaches the direct child, and the kernel sends it when the
// OS thread that forked the child exits, not the process: the Go runtime
// keeps its threads until the process ends, except the thread of a
// goroutine that exits while locked to it with runtime.LockOSThread. That
// is why, on Linux, Start also registers the command's group with a guardian.
func apply(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	setDeathSignal(cmd.SysProcAttr)
}

// Group returns the process group the command leads: its pid. It is what
// a step records (node.Call.ProcessStarted) for KillGroup.
func (t *Tree) Group() int { return t.pid }

// Signal sends sig to the command's process group. A group that is already
// gone is not an error.
func (t *Tree) Signal(sig syscall.Signal) {
	_ = syscall.Kill(-t.pid, sig)
}

// Await waits, at most limit, until no process of the command's group is
// left. Signal delivery is asynchronous: a killed process may live a
// moment longer.
func (t *Tree) Await(limit time.Duration) {
	deadline := time.Now().Add(limit)
	for syscall.Kill(-t.pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}
