package proc

// GuardianPID is the process id of the last guardian this process started.
func GuardianPID() int {
	guardian.mu.Lock()
	defer guardian.mu.Unlock()
	return guardianPID
}

// HoldAfterStart makes Start call f between a command's start and the
// registration of its group (the helper's stand-in for a Skein descheduled
// there).
func HoldAfterStart(f func(pid int)) { afterStart = f }
