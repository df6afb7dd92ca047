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

func embeddedMigrations() fs.FS { return store.MigrationsDir(migrationFiles) }

// freshSchema is the schema the embedded migrations build, as the CREATE
// statements SQLite keeps for it, written by TestFreshSchemaIsTheMigrated
// with -update. A new database executes it instead of every migration in
// turn: the later migrations rebuild and alter tables, and each of those
// makes SQLite parse the whole schema again (13 of a cold `skein run`'s
// ~30 ms of CPU went to migrating a new database).
//
//go:embed schema.sql
var freshSchema string

// freshVersion is the schema version freshSchema is, from its first line
// ("-- schema version N"); 0 when that line is missing.
func freshVersion() int {
	var v int
	if _, err := fmt.Sscanf(freshSchema, "-- schema version %d\n", &v); err != nil {
		return 0
	}
	return v
}

// migrate applies the migrations after version have, each in its own
// transaction with its schema_migrations row. An up-to-date database is not
// written to. The version is read again inside each transaction, so two
// processes opening a new database at once apply every migration once.
func (s *Store) migrate(ctx context.Context, migs []store.MigrationFile, have int) error {
	latest := migs[len(migs)-1].Version
	var pending []store.MigrationFile
	for _, m := range migs {
		if m.Version > have {
			pending = append(pending, m)
		}
	}
	if len(pending) == 0 {
		return nil
	}
	// Every pending migration in one transaction: a new database costs one
	// commit, not one per migration, and a failed migration leaves the
	// database as it was.
	op := fmt.Sprintf("migrating %s to schema version %d (%s)", s.path, latest, migs[len(migs)-1].Name)
	var newer int
	var applied []store.Migration
	err := s.write(ctx, op, func(tx *sql.Tx) error {
		applied = applied[:0]
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
		if have == 0 && s.fresh && freshVersion() == latest {
			return s.createFresh(ctx, tx, migs, &applied)
		}
		for _, m := range pending {
			if have >= m.Version {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
				return fmt.Errorf("schema version %d (%s): %w", m.Version, m.Name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.Version, m.Name, time.Now().UnixMicro()); err != nil {
				return err
			}
			applied = append(applied, store.Migration{Version: m.Version, Name: m.Name})
		}
		return nil
	})
	if err != nil {
		return err
	}
	if newer > 0 {
		return s.newerSchema(newer, latest)
	}
	s.schema.Applied = append(s.schema.Applied, applied...)
	s.schema.Version = latest
	return nil
}

// createFresh builds a new database's schema from freshSchema and records
// every migration as applied, in the migration's transaction tx.
func (s *Store) createFresh(ctx context.Context, tx *sql.Tx, migs []store.MigrationFile, applied *[]store.Migration) error {
	if _, err := tx.ExecContext(ctx, freshSchema); err != nil {
		return fmt.Errorf("schema version %d: %w", migs[len(migs)-1].Version, err)
	}
	now := time.Now().UnixMicro()
	for _, m := range migs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, now); err != nil {
			return err
		}
		*applied = append(*applied, store.Migration{Version: m.Version, Name: m.Name})
	}
	return nil
}

// placed finishes a new database this process made from freshImage: its
// migrations are recorded as applied now, and reported as applied by this
// open, as a new database made by migrate reports them.
func (s *Store) placed(migs []store.MigrationFile) error {
	op := fmt.Sprintf("recording the schema of the new database %s", s.path)
	err := s.write(context.Background(), op, func(tx *sql.Tx) error {
		_, err := tx.Exec(`UPDATE schema_migrations SET applied_at = ? WHERE applied_at = 0`, time.Now().UnixMicro())
		return err
	})
	if err != nil {
		return err
	}
	for _, m := range migs {
		s.schema.Applied = append(s.schema.Applied, store.Migration{Version: m.Version, Name: m.Name})
	}
	return nil
}
