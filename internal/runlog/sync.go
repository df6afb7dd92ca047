package runlog

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
)

// syncOwn makes durable what the Writer itself wrote: events.jsonl,
// run.json, the folder's entries, the folder's own name in its parent and
// the names of the folders Open made above it. It is what a folder that
// holds nothing else needs: a few fsyncs of its own files, whatever else
// the file system has to write. They run one after the other: the first
// commits the file system's journal, which holds the others' changes too
// (issued at once, each blocked a thread of its own and took longer).
func (w *Writer) syncOwn() error {
	syncs := []func() error{func() error {
		f, err := w.root.Open(runFile)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err == nil {
			err = errors.Join(f.Sync(), f.Close())
		}
		return pathErr("cannot sync", filepath.Join(w.dir, runFile), err)
	}}
	if w.events != nil {
		syncs = append(syncs, func() error {
			return pathErr("cannot sync", filepath.Join(w.dir, eventsFile), w.events.Sync())
		})
	}
	dirs := []string{w.dir, filepath.Dir(w.dir)}
	for _, d := range w.madeAbove {
		dirs = append(dirs, filepath.Dir(d))
	}
	slices.Sort(dirs)
	for _, d := range slices.Compact(dirs) {
		syncs = append(syncs, func() error { return pathErr("cannot sync", d, syncFolder(d)) })
	}
	for _, f := range syncs {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// pathErr is pathError for an error that may be nil.
func pathErr(what, path string, err error) error {
	if err == nil {
		return nil
	}
	return pathError(what, path, err)
}

// holdsOwnFilesOnly reports whether the folder holds nothing but the files
// the Writer writes (events.jsonl, run.json): no node folder, artifact or
// blob, which others wrote into it.
func (w *Writer) holdsOwnFilesOnly() (bool, error) {
	d, err := w.root.Open(".")
	if err != nil {
		return false, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n != eventsFile && n != runFile {
			return false, nil
		}
	}
	return true, nil
}
