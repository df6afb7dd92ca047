package main_test

import (
	"encoding/json"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres/pgtest"
)

// pgURL returns the URL of a fresh Postgres schema with a password in it:
// the test server trusts local connections, so the password is never
// checked, and the tests can look for it in everything skein prints.
func pgURL(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(pgtest.URL(t))
	require.NoError(t, err)
	u.User = url.UserPassword(u.User.Username(), pgPassword)
	return u.String()
}

const pgPassword = "pg-s3cret-pw"

func noPassword(t *testing.T, ps ...proc) {
	t.Helper()
	for _, p := range ps {
		require.NotContains(t, p.stdout+p.stderr, pgPassword, "a password is never printed")
	}
}

// TestRunOnPostgres: skein run --db postgres://… records the run in
// Postgres, where runs list and runs show find it, from any folder.
func TestRunOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgURL(t)

	mig := run(t, "migrate", "--db", db)
	require.Equal(t, 0, mig.code, mig.stderr)
	require.Contains(t, mig.stdout, "applied 0001 init")
	require.Contains(t, mig.stdout, "migrated from schema version 0 to")

	r := run(t, "run", "--db", db, "--local", "--dir", t.TempDir(), "../../examples/hello.yaml", "-i", "who=Ada")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.Contains(t, r.stdout, "Hello, Ada!")
	var id string
	for _, line := range strings.Split(r.stdout, "\n") {
		if f := strings.Fields(line); len(f) >= 3 && f[0] == "▶" {
			id = f[2]
		}
	}
	require.NotEmpty(t, id, r.stdout)

	elsewhere := t.TempDir() // another folder: the runs are in the database
	list := run(t, "runs", "list", "--db", db, "--dir", elsewhere)
	require.Equal(t, 0, list.code, list.stderr)
	require.Regexp(t, id+`\s+hello\s+completed`, list.stdout)

	show := run(t, "runs", "show", "--db", db, "--dir", elsewhere, "--output", "json", id)
	require.Equal(t, 0, show.code, show.stderr)
	var doc struct {
		Status  string         `json:"status"`
		Outputs map[string]any `json:"outputs"`
		Steps   []struct{ Node, Status string }
	}
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	require.Equal(t, "completed", string(doc.Status))
	require.Equal(t, "Hello, Ada!", doc.Outputs["greeting"])
	require.Len(t, doc.Steps, 3)

	cmd := exec.Command(bin, "runs", "list", "--dir", elsewhere)
	cmd.Env = append(cmd.Environ(), "SKEIN_DB="+db)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	require.Contains(t, string(out), id, "SKEIN_DB names the database too")

	again := run(t, "migrate", "--db", db)
	require.Equal(t, 0, again.code, again.stderr)
	require.Contains(t, again.stdout, "is up to date")
	noPassword(t, mig, r, list, show, again)
}

// TestCancelOnPostgres: a cancel from another process reaches the run's
// owner through the database.
func TestCancelOnPostgres(t *testing.T) {
	t.Parallel()
	db := pgURL(t)
	dir := t.TempDir()
	cmd, id, sc := started(t, "run", "--db", db, "--local", "--dir", dir, "testdata/long.yaml")
	for sc.Scan() {
		if strings.Contains(sc.Text(), "start") {
			break
		}
	}
	list := run(t, "runs", "list", "--db", db, "--status", "running")
	require.Contains(t, list.stdout, id, "the live run is listed running")

	c := run(t, "cancel", "--db", db, id)
	require.Equal(t, 0, c.code, c.stderr)
	// The node sleeps an hour: the owner exits only because it saw the
	// request and stopped it.
	require.Equal(t, 130, waitExit(t, cmd, time.Minute), "the owner sees the request at its next poll")

	show := run(t, "runs", "show", "--db", db, "--output", "json", id)
	var doc struct{ Status string }
	require.NoError(t, json.Unmarshal([]byte(show.stdout), &doc))
	require.Equal(t, "cancelled", string(doc.Status))
	noPassword(t, list, c, show)
}

// TestBadDB: a --db that cannot be used is an error that says why and
// never shows the password.
func TestBadDB(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, db string
		code     int
		want     string
	}{
		{"unreachable", "postgres://ada:" + pgPassword + "@127.0.0.1:1/skein", 1, "connecting to postgres://ada:xxxxx@127.0.0.1:1/skein"},
		{"bad URL", "postgres://ada:" + pgPassword + "@127.0.0.1:port/skein", 2, "not a valid Postgres URL"},
		{"other scheme", "mysql://ada:" + pgPassword + "@127.0.0.1/skein", 2, `"mysql://" is neither`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			for _, args := range [][]string{
				{"run", "--dir", t.TempDir(), "--db", tc.db, "../../examples/hello.yaml"},
				{"runs", "list", "--db", tc.db},
				{"migrate", "--db", tc.db},
			} {
				p := run(t, args...)
				require.Equal(t, tc.code, p.code, "%v: %s", args, p.stderr)
				require.Contains(t, p.stderr, tc.want, args)
				noPassword(t, p)
			}
		})
	}
}
