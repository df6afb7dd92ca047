// Package open opens the store a --db flag names: the Postgres database of
// a postgres:// URL, a SQLite file, or skein.db in the run folder, migrated
// to the schema this binary knows; with the shared blob store of queued
// runs on Postgres. It names the database for people and tells whether it
// exists. The runner is its one caller.
package open

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// ErrUsage: the flags name no database skein can keep runs in (a URL of
// another scheme, a malformed Postgres URL, a blob folder without
// Postgres). The error's text says what to give instead.
var ErrUsage = errors.New("not a database skein can use")

// usagef is an error wrapping ErrUsage whose text is the message alone.
func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

type usageError struct{ msg string }

func (e *usageError) Error() string        { return e.msg }
func (e *usageError) Is(target error) bool { return target == ErrUsage }

// Target names a database.
type Target struct {
	// Dir is the run folder; its skein.db is the database when DB is "".
	Dir string
	// DB is a postgres:// URL or the path of a SQLite file.
	DB string
	// PoolSize, when positive, is the most connections to a Postgres
	// database.
	PoolSize int32
}

// Store opens the store t names, migrated to the schema this binary knows.
func Store(ctx context.Context, t Target) (store.Store, error) {
	if err := Check(t.DB); err != nil {
		return nil, err
	}
	switch {
	case postgres.IsURL(t.DB):
		st, err := postgres.OpenWithOptions(ctx, t.DB, postgres.Options{MaxConns: t.PoolSize})
		if errors.Is(err, postgres.ErrBadURL) {
			return nil, usagef("--db %v", err)
		}
		return st, err
	case t.DB != "":
		return sqlite.Open(t.DB)
	}
	return sqlite.Open(filepath.Join(t.Dir, "skein.db"))
}

// Check refuses a URL that names neither Postgres nor a file.
func Check(db string) error {
	if scheme, _, ok := strings.Cut(db, "://"); ok && !postgres.IsURL(db) {
		return usagef("--db %s: skein keeps runs in Postgres (postgres://user@host:5432/db) or in a SQLite file (a path); %q is neither",
			postgres.Redact(db), scheme+"://")
	}
	return nil
}

// Name names the database of t for people: a Postgres URL without its
// password, or the SQLite file.
func Name(t Target) string {
	switch {
	case strings.Contains(t.DB, "://"):
		return postgres.Describe(t.DB)
	case t.DB != "":
		return t.DB
	}
	dir := t.Dir
	if dir == "" {
		dir = ".skein"
	}
	return filepath.Join(dir, "skein.db")
}

// Exists reports whether the database of t may hold runs: a Postgres URL
// always (opening it tells), a SQLite file when it exists.
func Exists(t Target) bool {
	if postgres.IsURL(t.DB) {
		return true
	}
	_, err := os.Stat(Name(t))
	return err == nil
}

// MigrateResult is what Migrate did.
type MigrateResult struct {
	// DB names the database (a Postgres URL without its password, or a
	// SQLite file).
	DB string
	store.SchemaReport
	// River lists the migrations of River's queue tables applied (a
	// Postgres database only).
	River []int
}

// Migrate opens the database of t, creating it when it is a SQLite file
// that does not exist, applies the migrations it lacks and closes it. A
// database a newer skein migrated further is refused (store.ErrNewerSchema)
// and left as it was.
func Migrate(ctx context.Context, t Target) (*MigrateResult, error) {
	if t.DB == "" {
		if t.Dir == "" {
			t.Dir = ".skein"
		}
		if err := os.MkdirAll(t.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("cannot create %s: %w; run from a writable folder or set --dir", t.Dir, err)
		}
	}
	st, err := Store(ctx, t)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	res := &MigrateResult{DB: Name(t)}
	if sr, ok := st.(interface{ Schema() store.SchemaReport }); ok {
		res.SchemaReport = sr.Schema()
	}
	if pg, ok := st.(*postgres.Store); ok {
		q, err := queue.Migrate(ctx, pg.Pool())
		if err != nil {
			return nil, err
		}
		res.River = q.River
	}
	return res, nil
}

// Blobs returns the blob store of queued runs on st — the folder dir
// names (a path or a file:// URL), else the Postgres database's table —
// mounted, so that the references workers wrote read in this process until
// unmount. Runs on SQLite keep their big values in their run folders: none
// is returned.
func Blobs(st store.Store, dir string) (be blob.Backend, unmount func(), err error) {
	pg, ok := st.(*postgres.Store)
	if !ok {
		if dir != "" {
			return nil, nil, usagef("--blobs %s: a shared blob folder is for workers on Postgres (--db postgres://…); local runs keep big values in their run folder", dir)
		}
		return nil, func() {}, nil
	}
	if dir != "" {
		if be, err = blob.NewShared(dir); err != nil {
			return nil, nil, usagef("--blobs: %v", err)
		}
	} else {
		be = pg.Blobs()
	}
	return be, blob.Mount(be), nil
}
