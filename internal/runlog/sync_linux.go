package runlog

import (
	"golang.org/x/sys/unix"
)

// sync makes the whole folder durable with one syncfs(2) of its file
// system: every file and folder entry the Writer wrote, at the cost of one
// call, where fsyncing each file cost one disk flush per node.
func (w *Writer) sync() error {
	d, err := w.root.Open(".")
	if err != nil {
		return pathError("cannot sync", w.dir, err)
	}
	defer d.Close()
	if err := unix.Syncfs(int(d.Fd())); err != nil {
		return pathError("cannot sync", w.dir, err)
	}
	return nil
}
