// Package mcp is Skein's MCP client: a Pool of sessions with the servers a
// workflow declares under mcp_servers, built on the official Go SDK.
//
// # Lifecycle
//
// A host makes one Pool per run with NewPool, hands it to node kinds through
// node.Call.Services[Service], and calls Close when the run ends. Nothing
// happens before the first use: importing a workflow, validating it or
// building the pool never starts a process or opens a connection. The first
// call that names a server starts it (a stdio server is spawned, an HTTP
// server is connected to) and every later call of the run shares that
// session, whichever node makes it. Callers that arrive while a server is
// starting wait for the same start.
//
// A stdio server runs with command and args, in cwd, with an explicit
// environment: PATH, HOME, LANG, TMPDIR and USER from Skein's own
// environment plus the server's env, and nothing else, so a secret reaches
// only the servers it is given to. args and env values (and the headers of
// an HTTP server) are templates rendered in the scope the host passes to
// NewPool, usually the run's inputs and secrets: {{ secrets.TOKEN }}. Each
// stdio server is the leader of its own process group and its stderr is
// kept (the last 2 KiB) to explain failures.
//
// Close closes every session. A stdio server gets its stdin closed and
// CloseGrace (2 s) to exit; then its whole process group is killed, so a
// server that ignores the end of its input does not stall the end of a run,
// and nothing it started survives it.
//
// # Caches and failures
//
// Tool lists are cached per session. Evict drops a server's cache (the mcp
// kind calls it before a retry, as DESIGN §2.5 asks), and a session whose
// server died is replaced by a fresh start on next use.
//
// Failures are node.Errors with a category a workflow author can act on:
//
//   - mcp_start: the server could not be started or refused the handshake
//     (command not found, not allowed, exited at once);
//   - mcp_protocol: the server exited during a call, dropped the connection
//     or answered with a JSON-RPC error;
//   - mcp_tool_error: the tool ran and reported an error (isError); the mcp
//     kind returns this one, from the result.
//
// Errors of stdio servers carry the tail of their stderr in Details.
// A call cut short by its context (the node's timeout, a cancel) returns at
// once; the server is then pinged, and one that does not answer within
// half a second is considered hung: its process group is killed and the next call
// starts it afresh.
//
// # Pinned tools
//
// Pins (lock.go) keep a workflow's lock file, <name>.skein.lock beside it:
// per server, a hash of each tool's description and input schema. The
// first check of a server the lock lacks pins all its tools and writes the
// file; later checks fail a tool a node would use that is new or changed
// (mcp_tool_changed). A host provides a run's Pins under LockService.
//
// # Which commands may run
//
// Pool.Allow is asked before a stdio server is spawned, with the absolute
// path of the program that would run (found with the server's own PATH).
// skein run leaves it nil: the only commands a pool can start are the ones
// declared in the workflow file being run, which its user chose to run.
// skein serve runs workflows that other people submit, so it will set Allow
// to an operator allowlist (AllowList); a server whose program is not on it
// fails with mcp_start / command_not_allowed before anything is spawned.
// Mind that an interpreter on the list (node, python, npx) runs whatever
// its arguments say.
//
// Templates in args end up on the server's command line, which other users
// of the machine can read; pass secrets in env instead.
package mcp
