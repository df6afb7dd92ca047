//go:build unix

package node

import "syscall"

// openFlags are added to the flags Files opens a file with.
const openFlags = syscall.O_NONBLOCK
