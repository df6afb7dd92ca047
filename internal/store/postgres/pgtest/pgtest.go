// Package pgtest gives tests a Postgres database of their own: a schema
// with a random name in the database of $SKEIN_TEST_POSTGRES_URL (default
// [DefaultURL]), dropped when the test ends.
//
// Without a reachable server the test is skipped, unless CI=true: then it
// fails, saying how to start one, so CI never passes by skipping.
//
// A test that stops or restarts the database makes a server of its own
// (NewServer) rather than touch the shared one.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the environment variable with the URL of the test server.
const EnvURL = "SKEIN_TEST_POSTGRES_URL"

// DefaultURL is the test server when EnvURL is not set: a local Postgres
// with trust authentication and a database named test.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"

// BaseURL is the URL of the test server's database.
func BaseURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

var (
	reachOnce sync.Once
	reachErr  error
)

// URL returns the URL of a new, empty schema of the test database (its
// search_path names the schema), dropped with everything in it when t ends.
func URL(t testing.TB) string {
	t.Helper()
	base := BaseURL()
	reachOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn, err := pgx.Connect(ctx, base)
		if err == nil {
			err = conn.Ping(ctx)
			_ = conn.Close(ctx)
		}
		reachErr = err
	})
	if reachErr != nil {
		msg := fmt.Sprintf("no Postgres server at %s (%v); set %s to the URL of a database the tests may create schemas in, "+
			"or start one, e.g. docker run -d -p 5432:5432 -e POSTGRES_HOST_AUTH_METHOD=trust -e POSTGRES_DB=test postgres:16",
			redact(base), reachErr, EnvURL)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}

	schema := "skein_test_" + randomHex(8)
	exec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { exec(t, base, "DROP SCHEMA "+schema+" CASCADE") })

	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func exec(t testing.TB, base, sql string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", redact(base), err)
	}
	defer func() { _ = conn.Close(ctx) }()
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func redact(s string) string {
	if u, err := url.Parse(s); err == nil {
		return u.Redacted()
	}
	return "the URL in $" + EnvURL
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
