package runner

import (
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/node"
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

// MockQuery is a node's visit a mock may answer (Options.Mock).
type MockQuery struct {
	Node      string
	Visit     int
	Iteration int
}

// MockAnswer is a mock's answer for a node: its output and directives, or
// Err to fail the attempt with.
type MockAnswer struct {
	Output     map[string]any
	Directives map[string]any
	Err        *node.Error
}

// mockReuse is the engine's reuse hook of a mock, falling back to reuse.
func mockReuse(mock func(MockQuery) (MockAnswer, bool), reuse func(engine.ReuseQuery) (engine.Reused, bool)) func(engine.ReuseQuery) (engine.Reused, bool) {
	return func(q engine.ReuseQuery) (engine.Reused, bool) {
		if a, ok := mock(MockQuery{Node: q.Node, Visit: q.Visit, Iteration: q.Iteration}); ok {
			return engine.Reused{Mocked: true, Output: a.Output, Directives: a.Directives, Err: a.Err}, true
		}
		if reuse != nil {
			return reuse(q)
		}
		return engine.Reused{}, false
	}
}

// IsDatabaseURL reports whether s names a Postgres database
// (postgres:// or postgresql://) rather than a directory.
func IsDatabaseURL(s string) bool { return postgres.IsURL(s) }

// RedactURL is a database URL with its password masked, for messages.
func RedactURL(s string) string { return postgres.Redact(s) }
