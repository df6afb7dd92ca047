// Package mcp implements the mcp node kind: it calls one tool of an MCP
// server declared in the workflow's mcp_servers, through the run's pool
// (internal/mcp), which the host hands over in Call.Services.
//
// Before the call, when the host provides the workflow's pins
// (internal/mcp.LockService), the tool is checked against the lock file:
// one that changed since it was pinned fails the node (validation,
// mcp_tool_changed). Then the arguments are checked against the tool's
// input schema; a mismatch fails the node at once (validation, invalid_arguments)
// with a message naming the tool and each bad field. A retry (attempt > 1)
// first evicts the server's cached tool list.
//
// An argument written {resolve, from: {tool, args, server}, field, model}
// is resolved before anything else (resolve.go), the tool before a model:
// find_text is called for the target (in the app the server focused last)
// and one match is the answer; another listing tool's one item named as
// the target is the answer; the host's Picker (the run's models) is asked
// only to choose among several matches, or among the names find_text saw
// or the items listed when nothing matched directly. What a model decided
// is kept in the host's Resolutions for the run — find_text names by
// (target, app), list_apps picks by app name, other picks by (tool
// arguments, target, focused app) — and what a node's kind of call keeps
// is dropped before its retry (its resolutions, and the focused app for
// focus_window). Each resolution is a resolved event saying whether the
// tool, the cache or the model answered; what the model spent is the
// output's _token_usage (or the error's).
//
// The output follows the variable-extraction rule:
//
//   - structuredContent, when the tool returns it, is the result;
//   - else the text content (its text parts joined by newlines) parsed as
//     JSON when it is JSON: an object gives its keys, an array gives items,
//     found, count and its first element's fields, a scalar gives value;
//   - else {text}.
//
// Top-level keys of a JSON object that begin with "_" are directives
// (_route, _state_patch, …) and stay at the top of the result, where the
// engine takes them from, so a tool routes by answering {"_route": "b"}.
//
// Images, audio and embedded binary resources in the result are written to
// the node's artifact folder as <tool>-<n>.<ext> (n counts up, never
// overwriting an earlier file) and listed in the output as
// images: [{path, mime}], audio: [{path, mime}] and
// resources: [{path, mime, uri}] (a text resource is listed with its text
// instead of a path). Links to resources are listed as
// resource_links: [{uri, name, title, description, mime, size}] (the keys
// the server gave). These keys replace keys of the same name in the parsed
// result.
//
// A result with isError fails the node with category mcp_tool_error, code
// mcp_error and details {text}. Other failures are those of the pool:
// mcp_start, mcp_protocol, timeout, cancelled.
//
// Every call records a tool_call event (server, tool and arguments, secrets
// redacted) and a tool_result event (text clipped to 2 KiB, image count,
// resource_links count, duration_ms, is_error). The call asks for progress
// notifications; each one the server sends is a tool_progress event
// (progress, total when known, message).
package mcp
