package runner

import (
	"errors"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/postgres"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The error catalogue: every error the runner returns has a stable code and a
// class (Classify). Front ends render it and decide nothing: the CLI an exit
// code and {"error": {"code": …}}, the HTTP API a status and a problem, the
// MCP server a tool error — the same mistake has the same code in each.

// Class is what kind of failure an error is; a front end maps it to an
// exit code or a status.
type Class string

// The classes.
const (
	// ClassInvalid: the request cannot be carried out as given (a usage
	// error, an invalid workflow); asking again the same way fails again.
	ClassInvalid Class = "invalid"
	// ClassNotFound: no run, node, artifact or version has the key given.
	ClassNotFound Class = "not_found"
	// ClassConflict: the run is not in a state the request works on
	// (completed, not running, not waiting).
	ClassConflict Class = "conflict"
	// ClassOwned: another live process runs the run, or took it over.
	ClassOwned Class = "owned"
	// ClassBusy: the database is locked by another process for now.
	ClassBusy Class = "busy"
	// ClassUnavailable: the database cannot be reached; the same request
	// may succeed once it is back.
	ClassUnavailable Class = "unavailable"
	// ClassInternal: anything else.
	ClassInternal Class = "internal"
)

// Codes of the catalogue, stable for programs to branch on. A node's
// error that stops a request before a run keeps its own code (llm_config
// and the like), with class internal.
const (
	CodeUsage           = "usage"            // UsageError, ErrNoQueue: the message says what to do
	CodeInvalidWorkflow = "invalid_workflow" // InvalidError, a missing workflow file included
	CodeAmbiguousRunID  = "ambiguous_run_id" // AmbiguousError
	CodeNotFound        = "not_found"        // ErrNotFound, ErrNoNode, ErrNoArtifact, ErrNoVersion, store.ErrNotFound
	CodeCompleted       = "completed"        // ErrCompleted
	CodeNotRunning      = "not_running"      // ErrNotRunning
	CodeNotWaiting      = "not_waiting"      // ErrNotWaiting
	CodeRunOwned        = "run_owned"        // OwnedError, store.ErrOwned
	CodeLeaseLost       = "lease_lost"       // store.ErrLeaseLost
	CodeRunExists       = "run_exists"       // store.ErrExists: a run with the id exists
	CodeDatabaseLocked  = "database_locked"  // store.ErrLocked
	CodeDatabaseInvalid = "database_invalid" // store.ErrCorrupt, store.ErrNewerSchema
	CodeUnavailable     = "unavailable"      // the database cannot be reached
	CodeInternal        = "internal"         // anything else
)

// Error is an error as every front end shows it: its code, its class and
// the message for people. Err is the error classified (errors.As on an
// *Error reaches it, for details such as an AmbiguousError's matches).
type Error struct {
	Code  string
	Class Class
	Msg   string
	Err   error
	// Diagnostics are an invalid workflow's problems.
	Diagnostics workflow.Diagnostics
	// RunID names the run the error is about, when it is known (a run
	// another process owns).
	RunID string
}

func (e *Error) Error() string { return e.Msg }

func (e *Error) Unwrap() error { return e.Err }

// Classify places err in the catalogue; nil stays nil. An *Error in err's
// chain is returned as it is.
func Classify(err error) *Error {
	if err == nil {
		return nil
	}
	var (
		fe    *Error
		inv   *InvalidError
		use   *UsageError
		amb   *AmbiguousError
		owned *OwnedError
		taken *store.OwnedError
		ne    *node.Error
	)
	e := &Error{Code: CodeInternal, Class: ClassInternal, Msg: err.Error(), Err: err}
	switch {
	case errors.As(err, &fe):
		return fe
	case errors.As(err, &inv):
		e.Code, e.Class, e.Diagnostics = CodeInvalidWorkflow, ClassInvalid, inv.Diagnostics
		if e.Diagnostics == nil {
			e.Diagnostics = workflow.Diagnostics{}
		}
	case errors.As(err, &use), errors.Is(err, ErrNoQueue):
		e.Code, e.Class = CodeUsage, ClassInvalid
	case errors.As(err, &amb):
		e.Code, e.Class = CodeAmbiguousRunID, ClassInvalid
	case errors.Is(err, ErrNotFound), errors.Is(err, ErrNoNode), errors.Is(err, ErrNoArtifact),
		errors.Is(err, ErrNoVersion), errors.Is(err, store.ErrNotFound):
		e.Code, e.Class = CodeNotFound, ClassNotFound
	case errors.Is(err, ErrCompleted):
		e.Code, e.Class = CodeCompleted, ClassConflict
	case errors.Is(err, ErrNotRunning):
		e.Code, e.Class = CodeNotRunning, ClassConflict
	case errors.Is(err, ErrNotWaiting):
		e.Code, e.Class = CodeNotWaiting, ClassConflict
	case errors.Is(err, store.ErrExists):
		e.Code, e.Class = CodeRunExists, ClassConflict
	case errors.Is(err, store.ErrOwned):
		e.Code, e.Class = CodeRunOwned, ClassOwned
		switch {
		case errors.As(err, &owned):
			e.RunID = owned.RunID
		case errors.As(err, &taken):
			e.RunID = taken.RunID
		}
	case errors.Is(err, store.ErrLeaseLost):
		e.Code, e.Class = CodeLeaseLost, ClassOwned
	case errors.Is(err, store.ErrLocked):
		e.Code, e.Class = CodeDatabaseLocked, ClassBusy
	case errors.Is(err, store.ErrCorrupt), errors.Is(err, store.ErrNewerSchema):
		e.Code, e.Class = CodeDatabaseInvalid, ClassInternal
	case errors.As(err, &ne):
		e.Code = ne.Code
		if ne.Message != "" {
			e.Msg = ne.Message
		}
	case postgres.Transient(err):
		e.Code, e.Class = CodeUnavailable, ClassUnavailable
	}
	return e
}
