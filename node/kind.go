package node

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Kind runs nodes of one kind. Run gets the node's parameters with every
// template already rendered and returns the node's output object. Returning
// an error fails the attempt; wrap it with Fail to give it a code and a
// category, or with Retry to ask for another attempt after a delay.
type Kind interface {
	Run(ctx context.Context, call *Call) (map[string]any, error)
}

// Call is one attempt of one node.
type Call struct {
	RunID   string
	NodeID  string
	Visit   int
	Attempt int
	// Params are the resolved parameters, defaults filled in.
	Params map[string]any
	// Written are the node's parameters as written in the workflow, before
	// any template was rendered and without defaults, so that a kind can
	// tell a value that came from a template from one written literally
	// (the shell kind refuses a templated argv element that would be read
	// as an option). Read it, never change it. Nil when the host does not
	// know the written form.
	Written map[string]any
	// IdempotencyKey is stable across attempts of one visit:
	// run/node/visit. Actions may pass it on.
	IdempotencyKey string
	// Emit records an event on the node's log (tool calls, truncations).
	// It is never nil.
	Emit func(kind string, data map[string]any)
	// Redact removes secret values from a string. It is never nil.
	Redact func(string) string
	// ArtifactDir is the folder for files this node produces.
	ArtifactDir string
	// Files is the run's file-access policy: a kind that reads a file a
	// parameter names, to send its bytes on (an llm node's images), reads
	// it through Files.Read, which allows only regular files inside the
	// run's folder and the folders the workflow declares under files:.
	// The host always sets it (the engine gives a kind no nil Files; were
	// it nil, Read would refuse every path).
	Files *Files

	// Blobs keeps big values out of memory: a kind whose output may be
	// long writes it through Blobs (see Blobs). Nil when the host keeps
	// none; the kind then builds its value in memory.
	Blobs Blobs
	// Eval evaluates a bare expression (a condition) in the node's scope.
	// It is never nil.
	Eval func(code string) (any, error)
	// Now is the run's clock. It is never nil.
	Now func() time.Time
	// Passes is, for a loop node, how many times its body has run in this
	// activation (0: enter the body without checking exit).
	Passes int
	// Services are the host's typed services (MCP servers, models,
	// budget, child runs, judge, HTTP policy); reach one through its key,
	// as in node.BudgetService.Get(call). Never nil when a host runs the
	// kind.
	Services *Services
	// ProcessStarted, when not nil, is called by a kind right after it
	// started a process group it owns for this attempt (the shell kind's
	// command), with the group's id, from Run and before Run returns. The
	// host records the group on the running step, so that when Skein dies
	// mid-step a resume can kill what the group left running before it
	// runs the node again. Call it once per group; the group is forgotten
	// when the attempt ends.
	ProcessStarted func(pgid int)
	// Resume is set when the step parked waiting for a signal (see
	// Spec.Parks) and the signal came: the kind goes on from it.
	Resume *Resume
}

// Resume is what a kind that parked its step goes on from.
type Resume struct {
	// Output is the output it parked with (directives removed).
	Output map[string]any
	// State is the _resume directive it parked with.
	State any
	// Signal is the signal's data.
	Signal any
}

// Error categories.
const (
	CategoryTemplate   = "template"
	CategoryValidation = "validation"
	CategoryTimeout    = "timeout"
	CategoryCancelled  = "cancelled"
	CategoryExecution  = "execution_failure"
	CategoryHTTPStatus = "http_status"
	CategoryConnection = "connection"
	CategoryInternal   = "internal"
)

// Error sources: where an error comes from (Error.Source).
const (
	// SourceRuntime: the node ran, or tried to, and failed.
	SourceRuntime = "runtime"
	// SourceValidation: a parameter's value, or what the node was asked
	// to do, is not valid (category validation).
	SourceValidation = "validation"
	// SourceTemplate: a template did not render (category template).
	SourceTemplate = "template"
)

// Error is the structured error of a failed step.
//
// A kind sets Code, Category, Message and Details; the engine sets Node,
// Source and Fixable when it records the error.
type Error struct {
	// Node is the id of the node whose step failed; "" for a run's error
	// that no node made (a cancel, the run's outputs).
	Node string `json:"node,omitempty"`
	// Source is where the error comes from: SourceRuntime,
	// SourceValidation or SourceTemplate.
	Source string `json:"source,omitempty"`
	// Fixable reports whether an edit of the workflow may cure the error:
	// the errors skein run --auto-repair repairs.
	Fixable  bool           `json:"fixable"`
	Code     string         `json:"code"`
	Category string         `json:"category"`
	Message  string         `json:"message"`
	Details  map[string]any `json:"details,omitempty"`
	// RetryAfter, when positive, asks for the next attempt no sooner than
	// this.
	RetryAfter time.Duration `json:"-"`
	// Permanent errors are not retried.
	Permanent bool  `json:"-"`
	Err       error `json:"-"`
}

func (e *Error) Error() string { return e.Message }
func (e *Error) Unwrap() error { return e.Err }

// Fail wraps err as a node error of the given category.
func Fail(category, code string, err error) *Error {
	return &Error{Code: code, Category: category, Message: err.Error(), Err: err}
}

// Failf is Fail with a formatted message.
func Failf(category, code, format string, args ...any) *Error {
	return Fail(category, code, fmt.Errorf(format, args...))
}

// Retry asks for another attempt after d (when retries remain).
func Retry(after time.Duration, err error) *Error {
	e := AsError(err)
	e.RetryAfter = after
	return e
}

// AsError returns err as a *Error, wrapping plain errors in the execution
// category.
func AsError(err error) *Error {
	if err == nil {
		return nil
	}
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	cat := CategoryExecution
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		cat = CategoryTimeout
	case errors.Is(err, context.Canceled):
		cat = CategoryCancelled
	}
	return &Error{Code: cat, Category: cat, Message: err.Error(), Err: err}
}
