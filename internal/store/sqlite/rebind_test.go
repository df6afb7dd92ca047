package sqlite

import (
	"testing"

	"github.com/skeinhq/skein/internal/store/sqlstore"
)

// TestRebind: a statement whose parameters come in order, each once, gets
// SQLite's anonymous parameters; one that repeats or reorders them keeps
// their numbers.
func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		`INSERT INTO t (a, b) VALUES ($1, $2), ($3, $4)`:       `INSERT INTO t (a, b) VALUES (?, ?), (?, ?)`,
		`UPDATE t SET a = $1 WHERE id = $2 AND a <> $1`:        `UPDATE t SET a = ?1 WHERE id = ?2 AND a <> ?1`,
		`SELECT * FROM t WHERE b = $2 AND a = $1`:              `SELECT * FROM t WHERE b = ?2 AND a = ?1`,
		`SELECT json_extract(doc, '$.a') FROM t WHERE id = $1`: `SELECT json_extract(doc, '$.a') FROM t WHERE id = ?`,
		`SELECT 1`: `SELECT 1`,
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
	// The multi-row inserts of the hot path: 1,536 parameters, anonymous.
	q := rebind(sqlstore.RowsSQL("INSERT INTO t VALUES ", "", 24, 64))
	for i := range len(q) - 1 {
		if q[i] == '?' && q[i+1] >= '0' && q[i+1] <= '9' {
			t.Fatalf("a numbered parameter in the 64-row insert: %.80q…", q[i:])
		}
	}
}
