// Package server is Skein's HTTP API (`skein serve`): the workflows of a
// folder, runs started, listed, shown, cancelled, resumed, rerun and
// signalled, and each run's events as Server-Sent Events — a front end
// over the runner, holding no run logic. docs/api.md describes the API and
// docs/openapi.yaml specifies it; a test keeps the two and the routes
// registered here the same.
//
// Every error is answered as application/problem+json with a stable code
// (problemOf is the one place that maps errors to statuses and codes).
// Authentication denies by default: every route but the probes (/healthz,
// /readyz) needs a bearer token whose scope (read < run < edit < admin)
// the route allows. The web viewer (package web) is served at / without a token; it signs in through
// /api/session, which keeps the token in an HttpOnly cookie that then
// authenticates as the token, with a CSRF token required on the requests
// that may change something (session.go).
//
// Executions the server starts outlive their request. A run that only
// waits (a signal, a long timer) is parked: left waiting, held by nothing;
// the server's wake-up poll resumes the waiting runs whose time has come.
// On shutdown nothing new starts in the executions, running nodes get a
// grace period to finish, and each run is left interrupted — recorded,
// unowned and resumable — or waiting, when it only waits. On start the
// server takes over the interrupted runs, and those of any dead owner,
// through their leases (takeover.go); waiting runs are left to the
// wake-up poll.
//
// The web editor reads and saves the workflow files (edit.go): a save
// names the version it was edited from (If-Match, the file's SHA-256) and
// never overwrites a change it did not see; the text is validated before
// it is written, written atomically inside the workflows folder only (an
// os.Root), and stored as the workflow's next version.
//
// While it serves, the schedule triggers of its workflows fire (package
// schedule keeps their times in the store; schedule.go starts their runs),
// and every execution is counted for GET /metrics and, when a tracer is
// configured, traced: a span per run and per node (metrics.go,
// telemetry.go, fed by the runner's observer, not by the engine).
package server
