package open_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/open"
)

// A --db names Postgres or a SQLite file: a URL of another scheme is an
// error of usage that says what to give, and the database is named for
// people without a password.
func TestNameAndCheck(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		target  open.Target
		want    string
		wantErr string
	}{
		{name: "the run folder's file", target: open.Target{Dir: "runs"}, want: filepath.Join("runs", "skein.db")},
		{name: "the default folder", target: open.Target{}, want: filepath.Join(".skein", "skein.db")},
		{name: "a SQLite file", target: open.Target{DB: "/tmp/x.db"}, want: "/tmp/x.db"},
		{name: "postgres without its password", target: open.Target{DB: "postgres://ann:secret@db:5432/skein"}, want: "postgres://ann:xxxxx@db:5432/skein"},
		{name: "another scheme", target: open.Target{DB: "mysql://db/skein"}, want: "mysql://db/skein",
			wantErr: `skein keeps runs in Postgres (postgres://user@host:5432/db) or in a SQLite file (a path); "mysql://" is neither`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, open.Name(tt.target))
			err := open.Check(tt.target.DB)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, open.ErrUsage)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}
}

// A SQLite file exists once a migration made it; a Postgres URL may
// always hold runs (opening it tells).
func TestMigrateMakesTheFile(t *testing.T) {
	t.Parallel()
	target := open.Target{Dir: filepath.Join(t.TempDir(), ".skein")}
	require.False(t, open.Exists(target))
	res, err := open.Migrate(t.Context(), target)
	require.NoError(t, err)
	require.Equal(t, open.Name(target), res.DB)
	require.True(t, open.Exists(target))
	require.True(t, open.Exists(open.Target{DB: "postgres://db/skein"}))
}
