package proc

// GuardianPID is the process id of the last guardian this process started.
func GuardianPID() int {
	guardian.mu.Lock()
	defer guardian.mu.Unlock()
	return guardianPID
}
