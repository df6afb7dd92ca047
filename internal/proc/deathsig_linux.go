package proc

import "syscall"

// setDeathSignal asks the kernel to SIGKILL the child when the thread that
// started it exits (see Apply for the caveat).
func setDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
