package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/internal/store/sqlite"
)

// openStore opens the store Config names: the Postgres database of a
// postgres:// URL in DB, the SQLite file DB, or Dir/skein.db when DB is
// empty. Either is migrated to the schema this binary knows.
func openStore(ctx context.Context, cfg Config) (store.Store, error) {
	if err := checkDB(cfg.DB); err != nil {
		return nil, err
	}
	switch {
	case postgres.IsURL(cfg.DB):
		st, err := postgres.OpenWithOptions(ctx, cfg.DB, postgres.Options{MaxConns: cfg.PoolSize})
		if errors.Is(err, postgres.ErrBadURL) {
			return nil, usagef("--db %v", err)
		}
		return st, err
	case cfg.DB != "":
		return sqlite.Open(cfg.DB)
	}
	return sqlite.Open(filepath.Join(cfg.Dir, "skein.db"))
}

// checkDB refuses a URL that names neither Postgres nor a file.
func checkDB(db string) error {
	if scheme, _, ok := strings.Cut(db, "://"); ok && !postgres.IsURL(db) {
		return usagef("--db %s: skein keeps runs in Postgres (postgres://user@host:5432/db) or in a SQLite file (a path); %q is neither",
			postgres.Redact(db), scheme+"://")
	}
	return nil
}

// DBName names the database of cfg for people: a Postgres URL without its
// password, or the SQLite file.
func DBName(cfg Config) string {
	switch {
	case strings.Contains(cfg.DB, "://"):
		return postgres.Redact(cfg.DB)
	case cfg.DB != "":
		return cfg.DB
	}
	dir := cfg.Dir
	if dir == "" {
		dir = ".skein"
	}
	return filepath.Join(dir, "skein.db")
}

// HasDatabase reports whether the database of cfg may hold runs: a
// Postgres URL always (opening it tells), a SQLite file when it exists.
func HasDatabase(cfg Config) bool {
	if postgres.IsURL(cfg.DB) {
		return true
	}
	_, err := os.Stat(DBName(cfg))
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

// Migrate opens the database of cfg, creating it when it is a SQLite file
// that does not exist, applies the migrations it lacks and closes it. A
// database a newer skein migrated further is refused (store.ErrNewerSchema)
// and left as it was.
func Migrate(ctx context.Context, cfg Config) (*MigrateResult, error) {
	if cfg.DB == "" {
		if cfg.Dir == "" {
			cfg.Dir = ".skein"
		}
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("cannot create %s: %w; run from a writable folder or set --dir", cfg.Dir, err)
		}
	}
	st, err := openStore(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	res := &MigrateResult{DB: DBName(cfg)}
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
