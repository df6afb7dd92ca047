//go:build !unix

package runner

import "os"

// processAlive reports whether a process of this host exists.
func processAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
