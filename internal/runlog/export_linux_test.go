package runlog

// SyncedWholeFS reports whether w's end synced its whole file system
// (syncfs) rather than its own files.
func SyncedWholeFS(w *Writer) bool { return w.syncedFS }
