// Package cassette records a run's interactions with the outside world and
// answers them again: a Tape sits at the seams where node kinds reach out
// — the HTTP transport of the models, of the judge and of http nodes, the
// MCP pool, the shell kind, each call's clock (node.ClockService) — and
// either passes each request on and keeps the exchange (recording) or
// answers it from a recorded cassette without sending it (replaying).
//
// A cassette is a JSON-lines file in the run folder (FileName): a Header,
// then one Entry per interaction. Each entry names the node, visit and
// attempt that made the request (node.CallFrom of the request's context)
// and a hash of the request; a replayed request is answered by the unused
// entry of the same call and hash, or fails with a *MismatchError that
// shows how it differs from the one recorded.
//
// Secrets never reach the file: requests and answers are masked with the
// run's redactor before they are kept or hashed, so a replayed request,
// masked the same way, matches its recording. The run's id and start time,
// which templates may put into requests, are written as <execution.id> and
// <execution.started_at>, so that a replay (a new run) matches too. The
// host a request is sent to is recorded but not matched: a request to a
// moved server, or to a test fake on another port, is the same request.
package cassette
