package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlstore"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

func embeddedMigrations() fs.FS { return store.MigrationsDir(migrationFiles) }

// migrationLock is the advisory lock (with the schema's name) held while a
// migration is applied: "skein" in ASCII.
const migrationLock = 0x736b65696e

// migrate checks the schema and applies the migrations it lacks, each in
// its own transaction with its schema_migrations row. It changes nothing
// before the checks pass, and an up-to-date database is not written to.
// The version is read again under the advisory lock inside each
// transaction, so two processes opening a new database at once apply every
// migration once.
func (s *Store) migrate(ctx context.Context, migs []store.MigrationFile) error {
	latest := migs[len(migs)-1].Version
	have, err := s.inspect(ctx)
	if err != nil {
		return err
	}
	s.schema = store.SchemaReport{Version: have, Latest: latest}
	if have > latest {
		return s.newerSchema(have, latest)
	}
	for _, m := range migs {
		if m.Version <= have {
			continue
		}
		op := fmt.Sprintf("migrating %s to schema version %d (%s)", s.url, m.Version, m.Name)
		var newer int
		applied := false
		err := s.write(ctx, op, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1::bigint + hashtext(current_schema()))`, int64(migrationLock)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
				version    integer     NOT NULL PRIMARY KEY,
				name       text        NOT NULL,
				applied_at timestamptz NOT NULL DEFAULT now()
			)`); err != nil {
				return err
			}
			var cur int
			if err := tx.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&cur); err != nil {
				return err
			}
			if cur > latest {
				newer = cur
				return nil
			}
			if cur >= m.Version {
				return nil
			}
			if _, err := tx.Exec(ctx, m.SQL); err != nil {
				return err
			}
			applied = true
			_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
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

// inspect returns the schema version of the database: 0 for a new one. A
// schema with tables but no schema_migrations is not Skein's.
func (s *Store) inspect(ctx context.Context) (int, error) {
	var schema *string
	if err := s.pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		return 0, s.failed("opening "+s.url+": reading the schema", err)
	}
	if schema == nil {
		return 0, fmt.Errorf("opening %s: no schema of its search_path exists; create it (CREATE SCHEMA …) or name another", s.url)
	}
	// A Skein database is known by its schema_migrations, found through
	// the catalog's index on names; the schema's tables are listed only
	// when it has none (a new database, or not Skein's). information_schema
	// takes ~15 ms where the catalog is big (thousands of tables, or the
	// dead rows of tables made and dropped), at every start of a process.
	var known bool
	if err := s.pool.QueryRow(ctx, `SELECT to_regclass(quote_ident(current_schema()) || '.schema_migrations') IS NOT NULL`).Scan(&known); err != nil {
		return 0, s.failed("opening "+s.url+": reading the schema", err)
	}
	if known {
		return s.schemaVersion(ctx)
	}
	rows, err := s.pool.Query(ctx, `SELECT c.relname::text FROM pg_catalog.pg_class c
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
		ORDER BY c.relname`)
	if err != nil {
		return 0, s.failed("opening "+s.url+": reading the schema", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, s.failed("opening "+s.url+": reading the schema", err)
	}
	if len(names) == 0 {
		return 0, nil
	}
	if !slices.Contains(names, "schema_migrations") {
		if len(names) > 8 {
			names = append(names[:8], "…")
		}
		return 0, &sqlstore.Condition{
			Msg: fmt.Sprintf("%s (schema %s) holds tables but is not a Skein database (it has %s and no schema_migrations); "+
				"point --db at an empty database, or add search_path=<an empty schema> to the URL — nothing was changed",
				s.url, *schema, strings.Join(names, ", ")),
			Errs: []error{store.ErrCorrupt},
		}
	}
	return s.schemaVersion(ctx)
}

// schemaVersion is the latest migration schema_migrations records.
func (s *Store) schemaVersion(ctx context.Context) (int, error) {
	var v int
	if err := s.pool.QueryRow(ctx, `SELECT COALESCE(MAX(version), 0) FROM schema_migrations`).Scan(&v); err != nil {
		return 0, s.failed("opening "+s.url+": reading the schema version", err)
	}
	return v, nil
}

func (s *Store) newerSchema(have, know int) error {
	return sqlstore.NewerSchema(s.url, "--db", have, know)
}
