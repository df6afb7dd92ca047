//go:build unix && !linux

package proc

import "syscall"

// setDeathSignal does nothing: only Linux is asked to kill a child when
// Skein dies; elsewhere KillGroup stops what a dead Skein left.
func setDeathSignal(*syscall.SysProcAttr) {}
