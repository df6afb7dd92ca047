package proc

import (
	"io"
	"os/exec"
)

// Tree is a command started by Start, with every process it starts in
// turn. Its methods are safe to call from any goroutine; Wait is called
// once.
type Tree struct {
	cmd *exec.Cmd
	pid int // the command's own process, which leads its group
	// ctl, on Linux, is Skein's end of the socket the command's supervisor
	// watches: it stays open until Wait, and its end — Skein's death
	// included — makes the supervisor kill the tree.
	ctl io.Closer
}

// Pid is the command's own process id. On Linux cmd.Process is the
// supervisor that started it, not the command.
func (t *Tree) Pid() int { return t.pid }

// Wait waits for the command to exit, as cmd.Wait does; cmd.ProcessState
// then holds its exit status (a supervisor exits the way its command did).
func (t *Tree) Wait() error {
	err := t.cmd.Wait()
	if t.ctl != nil {
		_ = t.ctl.Close()
	}
	return err
}
