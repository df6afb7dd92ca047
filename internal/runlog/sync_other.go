//go:build !linux

package runlog

// sync makes events.jsonl and run.json durable, and the folder's entries
// where the system can sync a folder. Elsewhere than Linux there is no
// syncfs(2): the node files are not synced one by one, they can be written
// again from the database.
func (w *Writer) sync() error { return w.syncOwn() }

// syncFolder makes the names in dir durable where the system can sync a
// folder: best effort, not every system can.
func syncFolder(dir string) error {
	_ = syncDir(dir)
	return nil
}
