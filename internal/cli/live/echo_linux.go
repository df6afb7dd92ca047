package live

import (
	"os"

	"golang.org/x/sys/unix"
)

// quiet turns off the echo of typed keys on the terminal f while the view
// is drawn (a typed key, or the ^C of a Ctrl-C, would shift it); signals
// still work. The returned function restores the terminal.
func quiet(f *os.File) (restore func()) {
	fd := int(f.Fd())
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return func() {}
	}
	t := *old
	t.Lflag &^= unix.ECHO | unix.ECHOCTL
	if unix.IoctlSetTermios(fd, unix.TCSETS, &t) != nil {
		return func() {}
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }
}
