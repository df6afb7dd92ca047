//go:build !unix

package node

// openFlags are added to the flags Files opens a file with.
const openFlags = 0
