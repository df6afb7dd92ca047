package proc

import (
	"os/exec"
)

// Tree is a command started by Start, with every process it starts in
// turn. Its methods are safe to call from any goroutine; Wait is called
// once.
type Tree struct {
	cmd *exec.Cmd
	pid int // the command's own process, which leads its group
	// guarded, on Linux, says the group is registered with the guardian,
	// which kills it if Skein dies before Wait unregisters it.
	guarded bool
}

// Pid is the command's own process id.
func (t *Tree) Pid() int { return t.pid }
