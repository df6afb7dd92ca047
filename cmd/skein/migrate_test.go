package main_test

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

// TestMigrateCommand: skein migrate creates the folder's database, says
// what it applied, has nothing to do the second time, and refuses a
// database a newer skein migrated, on both stores.
func TestMigrateCommand(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), ".skein")
	first := run(t, "migrate", "--dir", dir)
	require.Equal(t, 0, first.code, first.stderr)
	require.Contains(t, first.stdout, "applied 0001 init")
	require.Contains(t, first.stdout, filepath.Join(dir, "skein.db")+" migrated from schema version 0 to")
	// README shows skein migrate on Postgres: its schema version is this one.
	latest := regexp.MustCompile(`migrated from schema version 0 to (\d+)\n`).FindStringSubmatch(first.stdout)
	require.NotNil(t, latest, first.stdout)
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	shown := regexp.MustCompile(`migrated from schema version \d+ to (\d+)`).FindAllStringSubmatch(string(readme), -1)
	require.NotEmpty(t, shown, "README shows skein migrate")
	for _, m := range shown {
		require.Equal(t, latest[1], m[1], "README's skein migrate reaches schema version %s; this skein's is %s", m[1], latest[1])
	}
	again := run(t, "migrate", "--dir", dir)
	require.Equal(t, 0, again.code, again.stderr)
	require.Contains(t, again.stdout, "is up to date")

	db, err := sql.Open("sqlite", filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	_, err = db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'future', 0)`)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	newer := run(t, "migrate", "--dir", dir)
	require.Equal(t, 1, newer.code)
	require.Contains(t, newer.stderr, "schema version 99")
	require.Contains(t, newer.stderr, "nothing was changed")

	url := pgURL(t)
	require.Equal(t, 0, run(t, "migrate", "--db", url).code)
	conn, err := pgx.Connect(context.Background(), url)
	require.NoError(t, err)
	_, err = conn.Exec(context.Background(), `INSERT INTO schema_migrations (version, name) VALUES (99, 'future')`)
	require.NoError(t, err)
	require.NoError(t, conn.Close(context.Background()))
	for _, args := range [][]string{{"migrate", "--db", url}, {"runs", "list", "--db", url}} {
		p := run(t, args...)
		require.Equal(t, 1, p.code, args)
		require.Contains(t, p.stderr, "has schema version 99 but this skein knows versions up to", args)
		noPassword(t, p)
	}
}
