//go:build !linux

package runlog

// sync makes events.jsonl and run.json durable, and the folder's entries
// where the system can sync a folder. Elsewhere than Linux there is no
// syncfs(2): the node files are not synced one by one, they can be written
// again from the database.
func (w *Writer) sync() error {
	if err := w.events.Sync(); err != nil {
		return pathError("cannot sync", w.events.Name(), err)
	}
	if f, err := w.root.Open(runFile); err == nil {
		err = f.Sync()
		_ = f.Close()
		if err != nil {
			return pathError("cannot sync", f.Name(), err)
		}
	}
	if d, err := w.root.Open("."); err == nil {
		_ = d.Sync() // best effort: not every system can sync a folder
		_ = d.Close()
	}
	return nil
}
