//go:build !linux

package proc

import (
	"errors"
	"os/exec"
)

// Start starts cmd under the proc rules and returns its tree: the command
// leads a process group of its own (where there are groups), which Signal
// and Await act on. No guardian watches it here: if Skein dies, the
// command and what it started go on running until a resume kills the
// group it recorded (KillGroup).
func Start(cmd *exec.Cmd) (*Tree, error) {
	if len(cmd.ExtraFiles) > 0 {
		return nil, errors.New("proc.Start: ExtraFiles are not passed on")
	}
	apply(cmd)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &Tree{cmd: cmd, pid: cmd.Process.Pid}, nil
}

// Wait waits for the command to exit, as cmd.Wait does.
func (t *Tree) Wait() error { return t.cmd.Wait() }
