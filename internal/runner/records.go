package runner

import (
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
)

// Conditions of the stores front ends tell apart with errors.Is, under
// the runner's names: a front end reaches runs only through the runner.
var (
	// ErrNoRecord: no workflow, token, schedule or delivery has the given
	// key (a run that is not found is ErrNotFound).
	ErrNoRecord = store.ErrNotFound
	// ErrExists: a run with the given id already exists.
	ErrExists = store.ErrExists
	// ErrOwned: the run has a live owner; the error is an *OwnedError or
	// a store's owned error, which says who.
	ErrOwned = store.ErrOwned
)

// Park says when an execution whose run only waits ends, leaving the run
// waiting and owned by nobody (Options.Park): when every branch waits for
// a signal or a timer due later than After; with SignalsOnly, only when a
// branch waits for a signal.
type Park = engine.Park

// A mock's question and answer (Options.Mock; engine.MockReuse).
type (
	MockQuery  = engine.MockQuery
	MockAnswer = engine.MockAnswer
)

// IsDatabaseURL reports whether s names a Postgres database
// (postgres:// or postgresql://) rather than a directory.
func IsDatabaseURL(s string) bool { return postgres.IsURL(s) }

// RedactURL is a database URL with its password masked, for messages.
func RedactURL(s string) string { return postgres.Redact(s) }
