//go:build unix

package shell

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// newProcessGroup makes the command the leader of a process group of its
// own, so that stopping it reaches every process it started.
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// signalGroup sends sig to the process group led by p. A group that is
// already gone is not an error.
func signalGroup(p *os.Process, sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid, sig)
}

// exitCode is the command's exit status, or 128 plus the signal number when
// a signal ended it, as a shell reports it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// awaitGroup waits, at most limit, until no process of the group led by p
// is left, so a stopped node has really stopped when Run returns. (Signal
// delivery is asynchronous: a killed process may live a moment longer.)
func awaitGroup(p *os.Process, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for syscall.Kill(-p.Pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
}
