package node

import "io"

// Blobs keeps a run's big values in its blob store (the run folder's
// blobs/, or the store every worker of a queued run reaches) rather than
// in memory. A kind whose output may be long — a command's stdout, a
// download — writes it to a BlobWriter instead of building a string, and
// puts what Commit returns in its output in place of the string. The host
// does the same with every output value over its inline limit once Run
// returns, so using Blobs only saves the kind's own buffer.
type Blobs interface {
	Create() (BlobWriter, error)
}

// BlobWriter receives one big text.
type BlobWriter interface {
	io.Writer
	// Commit ends the text and returns what the output holds in its place:
	// a reference to a blob of the run, which templates and the next
	// kinds read as the text, or the text itself when it must not be kept
	// in a blob (it holds a secret value). The blob is durable when Commit
	// returns.
	Commit() (any, error)
	// Abort drops what was written.
	Abort()
}
