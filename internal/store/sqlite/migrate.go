package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func embeddedMigrations() fs.FS {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		panic(err) // the embed pattern guarantees the folder
	}
	return sub
}

// A migration is one numbered file, NNNN_name.sql.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads the *.sql files of fsys; their numbers must run
// 1, 2, 3… without gaps.
func loadMigrations(fsys fs.FS) ([]migration, error) {
	names, err := fs.Glob(fsys, "*.sql")
	if err != nil {
		return nil, err
	}
	var migs []migration
	for _, name := range names {
		num, rest, ok := strings.Cut(strings.TrimSuffix(name, ".sql"), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: the name must be NNNN_name.sql", name)
		}
		src, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		migs = append(migs, migration{version: v, name: path.Base(rest), sql: string(src)})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].version < migs[j].version })
	for i, m := range migs {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %04d_%s: expected version %d (versions run 1, 2, 3… once each)", m.version, m.name, i+1)
		}
	}
	if len(migs) == 0 {
		return nil, fmt.Errorf("no migrations")
	}
	return migs, nil
}

// migrate applies the migrations after version have, each in its own
// transaction with its schema_migrations row. An up-to-date database is not
// written to. The version is read again inside each transaction, so two
// processes opening a new database at once apply every migration once.
func (s *Store) migrate(ctx context.Context, migs []migration, have int) error {
	latest := migs[len(migs)-1].version
	for _, m := range migs {
		if m.version <= have {
			continue
		}
		op := fmt.Sprintf("migrating %s to schema version %d (%s)", s.path, m.version, m.name)
		var newer int
		err := s.write(ctx, op, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    INTEGER NOT NULL PRIMARY KEY,
				name       TEXT    NOT NULL,
				applied_at INTEGER NOT NULL
			) STRICT`); err != nil {
				return err
			}
			var have int
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
				return err
			}
			if have > latest {
				newer = have
				return nil
			}
			if have >= m.version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return err
		}
		if newer > 0 {
			return s.newerSchema(newer, latest)
		}
	}
	return nil
}
