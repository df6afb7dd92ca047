package durable

import (
	"context"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
)

// Opened is the run of an execution, with its folder and blob stores.
type Opened struct {
	Run    *store.Run
	Folder *runlog.Writer
	// Blobs keeps the run's big values, masking with the run's Redactor;
	// RecordBlobs those of its records, masked already.
	Blobs, RecordBlobs *blob.Store
}

// Open opens the run an execution of workflow name records to: resume, a
// run claimed to go on with, its folder reopened and its file set to
// file; or else a new run of id, which fresh makes given its folder, and
// which is created in the store. The big values a killed execution of
// resume was writing are removed. On failure nothing stays open, and
// resume is released.
func (h *Host) Open(ctx context.Context, resume *store.Run, id, name, file string, fresh func(dir string) (*store.Run, error),
	started time.Time, meta map[string]any, red *redact.Redactor) (_ *Opened, err error) {
	o := &Opened{Run: resume}
	defer func() {
		if err != nil && o.Folder != nil {
			o.Folder.Close()
		}
		if err != nil && resume != nil {
			h.Release(ctx, resume)
		}
	}()
	if resume != nil {
		if o.Folder, err = h.ReopenFolder(resume.Dir, name, resume.ID, started, meta, red); err != nil {
			return nil, err
		}
		resume.File = file
		if err := h.Store.UpdateRun(ctx, resume); err != nil {
			return nil, err
		}
	} else {
		if o.Folder, err = h.OpenFolder(name, id, started, meta, red); err != nil {
			return nil, err
		}
		if o.Run, err = fresh(o.Folder.Dir()); err != nil {
			return nil, err
		}
		if err := h.Store.CreateRun(ctx, o.Run); err != nil {
			return nil, err
		}
	}
	if o.Blobs, err = h.BlobStore(o.Folder, red); err == nil && resume != nil {
		err = o.Blobs.RemoveStale() // what a killed execution was writing
	}
	if err == nil {
		o.RecordBlobs, err = h.BlobStore(o.Folder, nil)
	}
	if err != nil {
		return nil, err
	}
	return o, nil
}
