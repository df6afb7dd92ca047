//go:build unix && !linux

package proc

import (
	"errors"
	"fmt"
	"syscall"
	"time"
)

// KillGroup kills the process group pgid, left running by a Skein that
// died, before the step that started it runs again. Here process start
// times are not read, so startedAt is not checked: the group is killed if
// it exists. Skein's own group is never killed.
//
// killed reports whether the group was signalled. Once it was, KillGroup
// waits up to two seconds for its processes to be gone and returns
// ErrGroupSurvived if some are still there.
func KillGroup(pgid int, startedAt time.Time) (killed bool, err error) {
	if pgid <= 1 {
		return false, fmt.Errorf("killing process group %d: not a process group", pgid)
	}
	if pgid == syscall.Getpgrp() || syscall.Kill(-pgid, 0) != nil {
		return false, nil
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return false, nil
		}
		return false, fmt.Errorf("killing process group %d: %w", pgid, err)
	}
	deadline := time.Now().Add(killWait)
	for syscall.Kill(-pgid, 0) == nil {
		if time.Now().After(deadline) {
			return true, fmt.Errorf("process group %d: %w", pgid, ErrGroupSurvived)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true, nil
}
