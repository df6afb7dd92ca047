package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"time"

	"github.com/skeinhq/skein/internal/store"
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
type migration = store.MigrationFile

// loadMigrations reads the *.sql files of fsys (store.LoadMigrations).
func loadMigrations(fsys fs.FS) ([]migration, error) { return store.LoadMigrations(fsys) }

// migrate applies the migrations after version have, each in its own
// transaction with its schema_migrations row. An up-to-date database is not
// written to. The version is read again inside each transaction, so two
// processes opening a new database at once apply every migration once.
func (s *Store) migrate(ctx context.Context, migs []migration, have int) error {
	latest := migs[len(migs)-1].Version
	for _, m := range migs {
		if m.Version <= have {
			continue
		}
		op := fmt.Sprintf("migrating %s to schema version %d (%s)", s.path, m.Version, m.Name)
		var newer int
		applied := false
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
			if have >= m.Version {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return err
			}
			applied = true
			_, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UnixMicro())
			return err
		})
		if err != nil {
			return err
		}
		if newer > 0 {
			return s.newerSchema(newer, latest)
		}
		if applied {
			s.schema.Applied = append(s.schema.Applied, store.Migration{Version: m.Version, Name: m.Name})
		}
		s.schema.Version = m.Version
	}
	return nil
}
