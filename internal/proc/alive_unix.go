//go:build unix

package proc

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Alive reports whether a process of this host exists and is not a
// zombie (a killed child its parent has not reaped yet is dead, once all
// its threads ended).
func Alive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true // no /proc here: kill(0) is all we know
	}
	if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) {
		if stat[i+2] != 'Z' && stat[i+2] != 'X' {
			return true
		}
		// A process whose main thread ended first is a zombie while its
		// other threads still exit, holding its open files: it is gone
		// once it has no other thread.
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		return err == nil && len(tasks) > 1
	}
	return true
}
