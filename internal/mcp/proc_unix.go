//go:build unix

package mcp

import (
	"os"
	"os/exec"
	"syscall"
)

// newProcessGroup makes the command the leader of a process group of its
// own, so that stopping it reaches every process it started.
func newProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// killGroup kills the process group led by p. A group that is already gone
// is not an error.
func killGroup(p *os.Process) {
	_ = syscall.Kill(-p.Pid, syscall.SIGKILL)
}
