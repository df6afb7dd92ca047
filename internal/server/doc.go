// Package server is Skein's HTTP API (`skein serve`): the workflows of a
// folder, runs started, listed, shown, cancelled, resumed and rerun, and
// each run's events as Server-Sent Events — a front end over the runner,
// holding no run logic. docs/api.md describes the API and
// docs/openapi.yaml specifies it; a test keeps the two and the routes
// registered here the same.
//
// Every error is answered as application/problem+json with a stable code
// (problemOf is the one place that maps errors to statuses and codes).
// Authentication denies by default: every route but /healthz needs a bearer
// token whose scope (read < run < admin) the route allows.
//
// Executions the server starts outlive their request. On shutdown nothing
// new starts in them, running nodes get a grace period to finish, and each
// run is left interrupted: recorded, unowned and resumable.
package server
