package runlog

import (
	"golang.org/x/sys/unix"
)

// sync makes the folder durable. A folder holding only the Writer's own
// files gets their fsyncs (syncOwn): a syncfs(2) would also wait for
// everything else the file system has to write — a build, a download,
// other runs — which made a run's end as slow as the busiest writer on the
// machine. A folder others wrote into (node folders, artifacts, the node
// files of a traced run, blobs) is made durable whole with one syncfs of
// its file system, where fsyncing each file cost one disk flush per node.
func (w *Writer) sync() error {
	if own, err := w.holdsOwnFilesOnly(); err == nil && own {
		return w.syncOwn()
	}
	w.syncedFS = true
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

// syncFolder makes the names in dir durable.
func syncFolder(dir string) error { return syncDir(dir) }
