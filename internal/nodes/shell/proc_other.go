//go:build !unix

package shell

import "os"

// exitCode is the command's exit status.
func exitCode(ps *os.ProcessState) int { return ps.ExitCode() }
