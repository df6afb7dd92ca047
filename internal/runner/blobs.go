package runner

import (
	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/runlog"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// sharedBlobs returns the blob store of queued runs on st — the folder
// cfg.Blobs names, else the Postgres database's table — mounted, so that
// the references workers wrote read in this process until unmount. Runs on
// SQLite keep their big values in their run folders: none is returned.
func sharedBlobs(cfg Config, st store.Store) (be blob.Backend, unmount func(), err error) {
	pg, ok := st.(*postgres.Store)
	if !ok {
		if cfg.Blobs != "" {
			return nil, nil, usagef("--blobs %s: a shared blob folder is for workers on Postgres (--db postgres://…); local runs keep big values in their run folder", cfg.Blobs)
		}
		return nil, func() {}, nil
	}
	if cfg.Blobs != "" {
		if be, err = blob.NewShared(cfg.Blobs); err != nil {
			return nil, nil, usagef("--blobs: %v", err)
		}
	} else {
		be = pg.Blobs()
	}
	return be, blob.Mount(be), nil
}

// blobStore is where a run executed here keeps its big values: the shared
// store when the runs are in Postgres (so that any machine on the database
// reads them), else the folder of rl, the run's folder, made through rl
// when the first is kept (a served run's folder is made on demand). red
// is the run's Redactor, whose secrets are never kept; nil for a store of
// records masked already.
func (r *Runner) blobStore(rl *runlog.Writer, red *redact.Redactor) (*blob.Store, error) {
	if r.blobs != nil {
		return blob.New(r.blobs, holdsSecret(red)), nil
	}
	return blob.NewRunStore(rl, holdsSecret(red))
}
