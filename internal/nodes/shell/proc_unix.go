//go:build unix

package shell

import (
	"os"
	"syscall"
)

// exitCode is the command's exit status, or 128 plus the signal number when
// a signal ended it, as a shell reports it.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}
