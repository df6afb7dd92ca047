package cli_test

import (
	"bytes"
	"context"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite"
)

func TestCorruptDatabaseIsNeverReset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "skein.db")
	garbage := bytes.Repeat([]byte("not a database "), 500)
	require.NoError(t, os.WriteFile(db, garbage, 0o644))
	r := skein(t, "run", "--dir", dir, "testdata/ok.yaml", "-i", "city=Paris")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "is not a Skein database")
	require.Contains(t, r.stderr, "nothing was changed")
	after, err := os.ReadFile(db)
	require.NoError(t, err)
	require.Equal(t, garbage, after, "the file is left as it was")
}

func TestLockedDatabaseGivesClearError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := skein(t, "run", "--dir", dir, "testdata/ok.yaml", "-i", "city=Paris")
	require.Equal(t, 0, r.code, r.stderr)

	// Another process holds the write lock for longer than the busy timeout.
	conn, err := sql.Open("sqlite", filepath.Join(dir, "skein.db"))
	require.NoError(t, err)
	defer conn.Close()
	c, err := conn.Conn(context.Background())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.ExecContext(context.Background(), "BEGIN EXCLUSIVE")
	require.NoError(t, err)
	defer c.ExecContext(context.Background(), "ROLLBACK") //nolint:errcheck

	r = skein(t, "run", "--dir", dir, "testdata/ok.yaml", "-i", "city=Paris")
	require.Equal(t, 1, r.code)
	require.Contains(t, r.stderr, "locked")
}

// TestDiskFullMidRun runs on a 2 MiB tmpfs that fills up while the run
// writes large outputs: the run fails with a clear error, and the database
// still opens afterwards. Each output is 300,000 random bytes, a blob of
// its own (equal outputs would share one), so together they outgrow the
// tmpfs whatever room the database takes. It needs permission to mount
// (root); elsewhere it is skipped.
func TestDiskFullMidRun(t *testing.T) {
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (%v: %s)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	flow := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(flow, []byte(`version: 1
name: big
nodes:
  - {id: each, type: foreach, items: "{{ 1..40 }}"}
  - {id: blob, type: shell, command: [head, -c, "300000", /dev/urandom]}
  - {id: back, type: endloop, loop: each}
edges:
  - {from: each, to: blob, on: body}
  - {from: blob, to: back}
`), 0o644))
	r := skein(t, "run", "--dir", dir, flow)
	require.Equal(t, 1, r.code, r.stdout)
	// Whether the run folder or the database meets the full disk first
	// depends on their sizes (one table more in the schema tips it).
	require.Regexp(t, "no space left on device|database or disk is full", r.stdout+r.stderr)

	l := skein(t, "runs", "list", "--dir", dir)
	require.Equal(t, 0, l.code, "the database still opens: %s", l.stderr)
	require.Contains(t, l.stdout, "big")
}
