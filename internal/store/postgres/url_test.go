package postgres_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/store/postgres"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"no password", "postgres://ada@db:5432/skein", "postgres://ada@db:5432/skein"},
		{"password", "postgres://ada:s3cret@db:5432/skein?sslmode=disable", "postgres://ada:xxxxx@db:5432/skein?sslmode=disable"},
		{"escaped password", "postgresql://ada:p%40ss%2Fw@db/skein", "postgresql://ada:xxxxx@db/skein"},
		{"password parameter", "postgres://db/skein?user=ada&password=s3cret&sslmode=require", "postgres://db/skein?user=ada&password=xxxxx&sslmode=require"},
		{"unparsable", "postgres://ada:s3cret@db:port/skein", "postgres://ada:xxxxx@db:port/skein"},
		{"unparsable, @ in the password", "postgres://ada:s3@cret@db:port/skein?password=x&sslmode=y", "postgres://ada:xxxxx@db:port/skein?password=xxxxx&sslmode=y"},
		{"password parameter first", "postgres://db/skein?password=s3cret", "postgres://db/skein?password=xxxxx"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, postgres.Redact(tc.in))
		})
	}
}

// TestOpenErrors: a bad or unreachable URL is an error that names it,
// never with its password.
func TestOpenErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url string
		want      []string
		badURL    bool
	}{
		{"bad port", "postgres://ada:s3cret@127.0.0.1:port/skein", []string{"postgres://ada:xxxxx@127.0.0.1:port/skein", "not a valid Postgres URL", "invalid port"}, true},
		{"bad sslmode", "postgres://ada:s3cret@127.0.0.1/skein?sslmode=sometimes", []string{"postgres://ada:xxxxx@127.0.0.1/skein", "not a valid Postgres URL", "sslmode"}, true},
		{"not postgres", "mysql://ada:s3cret@127.0.0.1/skein", []string{"mysql://ada:xxxxx@127.0.0.1/skein", "must start with postgres://"}, true},
		// Port 1 on loopback: nothing listens, the connection is refused at once.
		{"unreachable", "postgres://ada:s3cret@127.0.0.1:1/skein?password=s3cret", []string{"connecting to postgres://ada:xxxxx@127.0.0.1:1/skein?password=xxxxx", "is the Postgres server running"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := postgres.OpenWithOptions(t.Context(), tc.url, postgres.Options{ConnectTimeout: 5 * time.Second})
			require.Error(t, err)
			require.Nil(t, s)
			for _, w := range tc.want {
				require.Contains(t, err.Error(), w)
			}
			require.False(t, strings.Contains(err.Error(), "s3cret"), "the password is not shown: %s", err)
			require.Equal(t, tc.badURL, errors.Is(err, postgres.ErrBadURL))
		})
	}
}

// TestDescribe: a URL that leaves its host or database to the defaults
// is named with the database they give, so that `skein migrate` says what
// it migrated; a whole URL is named as Redact names it.
func TestDescribe(t *testing.T) {
	t.Setenv("PGHOST", "db.internal")
	t.Setenv("PGPORT", "6432")
	t.Setenv("PGDATABASE", "skein")
	t.Setenv("PGUSER", "ops")
	require.Equal(t, "postgres:?sslmode=disable (database skein on db.internal:6432 as ops)", postgres.Describe("postgres://?sslmode=disable"))
	require.Equal(t, "postgres://u:xxxxx@h:5432/d", postgres.Describe("postgres://u:secret@h:5432/d"))
	require.NotContains(t, postgres.Describe("postgres:///?password=secret"), "secret")
}
