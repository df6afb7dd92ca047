package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/skeinhq/skein/internal/auth"
	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/workflow"
)

// Codes of the problems the API answers with: stable, for programs to
// branch on (docs/api.md lists them with their statuses).
const (
	CodeBadRequest           = reqbody.CodeBadRequest
	CodeInvalidBody          = reqbody.CodeInvalidBody
	CodeUsage                = runner.CodeUsage
	CodeInvalidInputs        = "invalid_inputs"
	CodeInvalidWorkflow      = runner.CodeInvalidWorkflow
	CodeUnauthorized         = "unauthorized"
	CodeForbidden            = "forbidden"
	CodeCSRF                 = "csrf"
	CodeNotFound             = runner.CodeNotFound
	CodeMethodNotAllowed     = "method_not_allowed"
	CodeRunOwned             = runner.CodeRunOwned
	CodeCompleted            = runner.CodeCompleted
	CodeNotRunning           = runner.CodeNotRunning
	CodeNotWaiting           = runner.CodeNotWaiting
	CodeAmbiguousRunID       = runner.CodeAmbiguousRunID
	CodeLeaseLost            = runner.CodeLeaseLost
	CodeRunExists            = runner.CodeRunExists
	CodeDatabaseLocked       = runner.CodeDatabaseLocked
	CodeDatabaseInvalid      = runner.CodeDatabaseInvalid
	CodeUnavailable          = runner.CodeUnavailable
	CodeIdempotencyReuse     = "idempotency_key_reused"
	CodeTooLarge             = "too_large"
	CodeUnsupportedMediaType = reqbody.CodeUnsupportedMediaType
	CodeDeliveryReplayed     = "delivery_replayed"
	CodeWebhookUnavailable   = "webhook_unavailable"
	CodeShuttingDown         = "shutting_down"
	CodeBusy                 = "busy"
	CodeNotReady             = "not_ready"
	CodeEditConflict         = "edit_conflict"
	CodeWorkflowExists       = "workflow_exists"
	CodePreconditionRequired = "precondition_required"
	CodeBadEdit              = "bad_edit"
	CodeNotPinnable          = "not_pinnable"
	CodeInternal             = runner.CodeInternal
)

// titles are the problems' titles, one per code.
var titles = map[string]string{
	CodeBadRequest:           "The request is not valid",
	CodeInvalidBody:          "The request body is not what its content type says",
	CodeUsage:                "The request cannot be carried out as given",
	CodeInvalidInputs:        "The inputs do not match the workflow's inputs",
	CodeInvalidWorkflow:      "The workflow is not valid",
	CodeUnauthorized:         "A valid API token is required",
	CodeForbidden:            "The token's scope does not allow this",
	CodeCSRF:                 "The request lacks the session's CSRF token",
	CodeNotFound:             "Not found",
	CodeMethodNotAllowed:     "Method not allowed",
	CodeRunOwned:             "The run is running in another process",
	CodeCompleted:            "The run completed",
	CodeNotRunning:           "The run is not running",
	CodeNotWaiting:           "The node is not waiting for a signal",
	CodeAmbiguousRunID:       "The run id prefix matches several runs",
	CodeLeaseLost:            "Another process took the run over",
	CodeRunExists:            "A run with this id exists",
	CodeDatabaseLocked:       "The database is locked by another process",
	CodeDatabaseInvalid:      "The database is not one this server can use",
	CodeUnavailable:          "The database cannot be reached",
	CodeIdempotencyReuse:     "The idempotency key was used for a different request",
	CodeTooLarge:             "The request body is too large",
	CodeUnsupportedMediaType: "The body's content type is not one the route takes",
	CodeDeliveryReplayed:     "The delivery was received before",
	CodeWebhookUnavailable:   "The webhook cannot take requests until the server is configured for it",
	CodeShuttingDown:         "The server is shutting down",
	CodeBusy:                 "The server is busy",
	CodeNotReady:             "The server is not ready",
	CodeEditConflict:         "The file changed since the version the edit started from",
	CodeWorkflowExists:       "The workflow or its file exists",
	CodePreconditionRequired: "The request must say which version it changes (If-Match)",
	CodeBadEdit:              "An edit of the workflow's text cannot be applied",
	CodeNotPinnable:          "The run cannot give the outputs of the node's upstream nodes",
	CodeInternal:             "Internal error",
}

// Problem is an error answer, an RFC 9457 problem details object with a
// stable code.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
	// Diagnostics are the problems of an invalid workflow.
	Diagnostics []workflow.Diagnostic `json:"diagnostics,omitempty"`
	// ExecutionID names the run the problem is about, when there is one.
	ExecutionID string `json:"execution_id,omitempty"`
	// RequestID names the request in the server's log, which has the
	// whole error, when the answer says less than the log.
	RequestID string `json:"request_id,omitempty"`
	// Theirs and Yours are the two versions of an edit conflict: the file
	// as it is now, and the text the request would have saved.
	Theirs *SourceVersion `json:"theirs,omitempty"`
	Yours  *SourceVersion `json:"yours,omitempty"`
}

func (p *Problem) Error() string { return p.Detail }

// problemf makes a problem with a code and a detail.
func problemf(status int, code, format string, args ...any) *Problem {
	title, ok := titles[code]
	if !ok { // a node's error that stopped the request before a run
		title = titles[CodeInternal]
	}
	return &Problem{Type: "https://skein.dev/problems/" + code, Title: title, Status: status,
		Detail: fmt.Sprintf(format, args...), Code: code}
}

// problemOf maps an error to its problem. The server's own (a body too
// large, too many runs, shutting down) are told apart here; every other
// error is the runner's catalogue's (runner.Classify): its code is the
// problem's, its class the status.
func problemOf(err error) *Problem {
	var p *Problem
	var refused *reqbody.Refusal
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &refused):
		return problemf(refused.Status, refused.Code, "%s", refused.Detail)
	case errors.As(err, &tooBig):
		return problemf(http.StatusRequestEntityTooLarge, CodeTooLarge, "the request body is larger than %d bytes", tooBig.Limit)
	case errors.Is(err, errBusy):
		return busyProblem()
	case errors.Is(err, errShuttingDown):
		return problemf(http.StatusServiceUnavailable, CodeShuttingDown, "the server is shutting down; try again on its successor")
	}
	fe := runner.Classify(err)
	p = problemf(statusOf(fe), fe.Code, "%s", fe.Msg)
	p.Diagnostics, p.ExecutionID = fe.Diagnostics, fe.RunID
	return p
}

// statusOf is the HTTP status of a class of the runner's errors.
func statusOf(fe *runner.Error) int {
	switch fe.Class {
	case runner.ClassInvalid:
		if fe.Code == runner.CodeInvalidWorkflow {
			return http.StatusUnprocessableEntity
		}
		return http.StatusBadRequest
	case runner.ClassNotFound:
		return http.StatusNotFound
	case runner.ClassConflict, runner.ClassOwned:
		return http.StatusConflict
	case runner.ClassBusy, runner.ClassUnavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// retried are the codes whose problems say when to try again
// (Retry-After): the condition passes by itself.
var retried = map[string]bool{CodeBusy: true, CodeNotReady: true, CodeUnavailable: true, CodeDatabaseLocked: true}

var errShuttingDown = errors.New("the server is shutting down")

// writeProblem answers with err as a problem; a server error is logged.
// The answer names no path of the server's (pathscrub); a caller that
// sent no API token (a webhook's, a probe's) is told only what the problem
// is when its detail named one, or when it is a server error: the log has
// the whole error, under the request id the answer gives.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := *problemOf(err)
	logged := p.Status >= 500 && p.Code != CodeShuttingDown && !retried[p.Code]
	detail, hadPath := s.paths.Scrub(p.Detail, r.URL.Path)
	p.Detail = detail
	if scopeOf(r.Context()) == auth.None && (logged || hadPath || p.Diagnostics != nil) {
		hadPath = true
		p.RequestID = newRequestID()
		p.Detail = "the server could not take the request; its log says why (request id " + p.RequestID + ")"
		p.Diagnostics = nil
	} else if p.Diagnostics != nil {
		p.Diagnostics = s.scrubDiagnostics(p.Diagnostics)
	}
	if p.RequestID == "" && (logged || hadPath) {
		p.RequestID = newRequestID()
	}
	switch {
	case logged:
		s.log.ErrorContext(r.Context(), "request failed", "method", r.Method, "path", r.URL.Path, "code", p.Code,
			"request_id", p.RequestID, "err", err)
	case hadPath: // the answer says less than the error
		s.log.WarnContext(r.Context(), "request refused", "method", r.Method, "path", r.URL.Path, "code", p.Code,
			"request_id", p.RequestID, "err", err)
	}
	if retried[p.Code] {
		w.Header().Set("Retry-After", "1")
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skein"`)
	}
	writeJSONStatus(w, "application/problem+json", p.Status, &p)
}

// scrubDiagnostics returns a copy of ds that names no path of the
// server's (ds itself is not changed: it may be shared).
func (s *Server) scrubDiagnostics(ds []workflow.Diagnostic) []workflow.Diagnostic {
	if ds == nil {
		return nil
	}
	out := make([]workflow.Diagnostic, len(ds))
	for i, d := range ds {
		d.File, _ = s.paths.Scrub(d.File, "")
		d.Message, _ = s.paths.Scrub(d.Message, "")
		out[i] = d
	}
	return out
}

// newRequestID names a request in the log.
func newRequestID() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "req_" + hex.EncodeToString(b)
}

// writeJSON answers with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeJSONStatus(w, "application/json", status, v)
}

func writeJSONStatus(w http.ResponseWriter, contentType string, status int, v any) {
	var buf bytes.Buffer
	var err error
	if d, ok := v.(*runner.RunDoc); ok {
		// A run's document, its steps without reflection: the same text.
		err = d.WriteJSON(&buf)
	} else {
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		err = enc.Encode(v)
	}
	data := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	if err != nil {
		slog.Error("encoding an answer", "err", err)
		contentType, status = "application/problem+json", http.StatusInternalServerError
		data, _ = json.Marshal(problemf(status, CodeInternal, "the answer could not be encoded: %v", err))
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(data, '\n'))
}
