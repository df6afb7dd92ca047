package shell

import (
	"os"

	"golang.org/x/sys/unix"
)

// unread is how many bytes wait in a pipe to be read.
func unread(f *os.File) int {
	conn, err := f.SyscallConn()
	if err != nil {
		return 0
	}
	n := 0
	_ = conn.Control(func(fd uintptr) {
		n, _ = unix.IoctlGetInt(int(fd), unix.TIOCINQ) // FIONREAD
	})
	return n
}
