//go:build !unix

package mcp

import (
	"os"
	"os/exec"
)

// newProcessGroup does nothing where process groups are not available.
func newProcessGroup(*exec.Cmd) {}

// killGroup kills the process itself: without process groups its children
// are not reached.
func killGroup(p *os.Process) { _ = p.Kill() }
