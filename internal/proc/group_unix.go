//go:build unix

package proc

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Apply sets the rules for a child process on cmd before it starts: it
// leads a process group of its own (Setpgid), so that stopping the group
// stops everything it started, and on Linux it gets SIGKILL when Skein dies
// (Pdeathsig), so that a killed Skein leaves no command or MCP server
// running behind it.
//
// Pdeathsig only reaches the direct child: a process it forked lives on in
// the group after Skein dies. KillGroup stops such a group later, given the
// group recorded when the process started (see Group).
//
// The Go caveat: the kernel sends the death signal when the OS thread that
// forked the child exits, not the process. The Go runtime keeps its threads
// until the process ends, except the thread of a goroutine that exits while
// locked to it with runtime.LockOSThread. So never call Start (or
// CombinedOutput, Run, …) on a command prepared by Apply from a goroutine
// that has locked its thread, or the child is killed when that goroutine
// ends.
func Apply(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pgid = 0
	setDeathSignal(cmd.SysProcAttr)
}

// Group returns the process group led by p, a process started with Apply:
// its pid. It is 0 where there are no process groups.
func Group(p *os.Process) int { return p.Pid }

// SignalGroup sends sig to the process group led by p, a process started
// with Apply. A group that is already gone is not an error.
func SignalGroup(p *os.Process, sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}

// AwaitGroup waits, at most limit, until no process of the group led by p
// is left. Signal delivery is asynchronous: a killed process may live a
// moment longer.
func AwaitGroup(p *os.Process, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for syscall.Kill(-p.Pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}
