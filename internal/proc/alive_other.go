//go:build !unix

package proc

import "os"

// Alive reports whether a process of this host exists.
func Alive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	_ = p.Release()
	return true
}
