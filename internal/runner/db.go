package runner

import (
	"context"
	"errors"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/open"
)

// target is the database cfg names.
func target(cfg Config) open.Target {
	return open.Target{Dir: cfg.Dir, DB: cfg.DB, PoolSize: cfg.PoolSize}
}

// usage makes a database the flags cannot name a *UsageError.
func usage(err error) error {
	if errors.Is(err, open.ErrUsage) {
		return &UsageError{Msg: err.Error()}
	}
	return err
}

// openStore opens the store Config names (open.Store).
func openStore(ctx context.Context, cfg Config) (store.Store, error) {
	st, err := open.Store(ctx, target(cfg))
	return st, usage(err)
}

// checkDB refuses a URL that names neither Postgres nor a file.
func checkDB(db string) error { return usage(open.Check(db)) }

// DBName names the database of cfg for people: a Postgres URL without its
// password, or the SQLite file.
func DBName(cfg Config) string { return open.Name(target(cfg)) }

// HasDatabase reports whether the database of cfg may hold runs: a
// Postgres URL always (opening it tells), a SQLite file when it exists.
func HasDatabase(cfg Config) bool { return open.Exists(target(cfg)) }

// MigrateResult is what Migrate did.
type MigrateResult = open.MigrateResult

// Migrate opens the database of cfg, creating it when it is a SQLite file
// that does not exist, applies the migrations it lacks and closes it
// (open.Migrate).
func Migrate(ctx context.Context, cfg Config) (*MigrateResult, error) {
	res, err := open.Migrate(ctx, target(cfg))
	return res, usage(err)
}

// sharedBlobs returns the blob store of queued runs on st, mounted
// (open.Blobs); none on SQLite.
func sharedBlobs(cfg Config, st store.Store) (blob.Backend, func(), error) {
	be, unmount, err := open.Blobs(st, cfg.Blobs)
	return be, unmount, usage(err)
}
