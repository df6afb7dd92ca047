package sqlite

import (
	"bytes"
	"compress/gzip"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

var update = flag.Bool("update", false, "rewrite schema.sql from the embedded migrations")

// schemaDump is the schema of s as freshSchema writes it: the CREATE
// statements SQLite keeps, tables first, each kind in the order it was
// made, without schema_migrations (migrate makes it before either path).
func schemaDump(t *testing.T, s *Store) string {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT sql FROM sqlite_schema
		WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> 'schema_migrations'
		ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 WHEN 'trigger' THEN 2 ELSE 3 END, rowid`)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var b strings.Builder
	for rows.Next() {
		var stmt string
		require.NoError(t, rows.Scan(&stmt))
		b.WriteString(stmt + ";\n\n")
	}
	require.NoError(t, rows.Err())
	return b.String()
}

func migrationRows(t *testing.T, s *Store) []string {
	t.Helper()
	rows, err := s.r.QueryContext(t.Context(), `SELECT version, name FROM schema_migrations ORDER BY version`)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var out []string
	for rows.Next() {
		var v int
		var name string
		require.NoError(t, rows.Scan(&v, &name))
		out = append(out, fmt.Sprintf("%d %s", v, name))
	}
	require.NoError(t, rows.Err())
	return out
}

// A new database made from schema.sql is the database the migrations make,
// one after the other: the same tables, columns, indexes and triggers,
// byte for byte, and the same migrations recorded as applied.
func TestFreshSchemaIsTheMigrated(t *testing.T) {
	dir := t.TempDir()
	stepwise, err := OpenWithOptions(filepath.Join(dir, "stepwise.db"), Options{migrations: withMigrations(t, nil)})
	require.NoError(t, err)
	defer func() { _ = stepwise.Close() }()
	want := schemaDump(t, stepwise)
	latest := stepwise.schema.Latest

	if *update {
		text := fmt.Sprintf("-- schema version %d\n-- The schema migrations/ build, for a new database in one step (see freshSchema).\n-- Written by `go test ./internal/store/sqlite -run TestFreshSchemaIsTheMigrated -update`; do not edit.\n\n%s", latest, want)
		if old, _ := os.ReadFile("schema.sql"); string(old) != text {
			require.NoError(t, os.WriteFile("schema.sql", []byte(text), 0o644))
			t.Skip("schema.sql rewritten; run the test again with -update, which writes fresh.db.gz from it")
		}
		writeImage(t, latest)
		t.Skip("fresh.db.gz rewritten; run the test again without -update")
	}
	require.Equal(t, latest, freshVersion(),
		"schema.sql is not the latest migration's schema: run go test ./internal/store/sqlite -run TestFreshSchemaIsTheMigrated -update")
	require.Equal(t, latest, imageVersion(),
		"fresh.db.gz is not the latest migration's database: run go test ./internal/store/sqlite -run TestFreshSchemaIsTheMigrated -update (twice if it rewrites schema.sql)")

	// A new database made from schema.sql, and one copied from
	// fresh.db.gz (Open's way), are both that database.
	fromSchema, err := OpenWithOptions(filepath.Join(dir, "from-schema.db"), Options{noImage: true})
	require.NoError(t, err)
	defer func() { _ = fromSchema.Close() }()
	require.Equal(t, want, schemaDump(t, fromSchema),
		"schema.sql is not what the migrations build: run go test ./internal/store/sqlite -run TestFreshSchemaIsTheMigrated -update")
	require.Equal(t, migrationRows(t, stepwise), migrationRows(t, fromSchema))
	require.Len(t, fromSchema.schema.Applied, latest, "a new database reports every migration as applied")

	fresh, err := Open(filepath.Join(dir, "fresh.db"))
	require.NoError(t, err)
	defer func() { _ = fresh.Close() }()
	require.Equal(t, want, schemaDump(t, fresh),
		"fresh.db.gz is not what the migrations build: run go test ./internal/store/sqlite -run TestFreshSchemaIsTheMigrated -update")
	require.Equal(t, migrationRows(t, stepwise), migrationRows(t, fresh))
	require.Equal(t, latest, fresh.schema.Version)
	require.Len(t, fresh.schema.Applied, latest, "a new database reports every migration as applied")

	// A database made from schema.sql takes the next migration as one made
	// step by step does.
	fresh.Close()
	next, err := OpenWithOptions(filepath.Join(dir, "fresh.db"), Options{migrations: withMigrations(t, map[string]string{
		fmt.Sprintf("%04d_next.sql", latest+1): `ALTER TABLE runs ADD COLUMN next_column TEXT`,
	})})
	require.NoError(t, err)
	defer func() { _ = next.Close() }()
	require.Equal(t, latest+1, next.schema.Version)
	require.Contains(t, schemaDump(t, next), "next_column TEXT")
}

// writeImage writes fresh.db.gz: a new database made from schema.sql, its
// migrations recorded with applied_at 0, closed (checkpointed into the one
// file).
func writeImage(t *testing.T, latest int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "image.db")
	s, err := OpenWithOptions(path, Options{noImage: true})
	require.NoError(t, err)
	_, err = s.w.Exec(`UPDATE schema_migrations SET applied_at = 0`)
	require.NoError(t, err)
	_, err = s.w.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`)
	require.NoError(t, err)
	require.NoError(t, s.Close())
	if fi, err := os.Stat(path + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		require.NoError(t, err)
		require.Zero(t, fi.Size(), "the database is whole in its one file")
	}
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	require.NoError(t, err)
	zw.Comment = fmt.Sprintf("schema version %d", latest)
	_, err = zw.Write(raw)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	require.NoError(t, os.WriteFile("fresh.db.gz", b.Bytes(), 0o644))
}
