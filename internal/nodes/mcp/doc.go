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
// is resolved before anything else (resolve.go): the listing tool is
// called, the host's Picker (the run's models) picks the item matching the
// description, and the argument becomes the item or its field. Picks are
// kept in the host's Resolutions for the run, by node and description,
// and dropped before a retry; each is a resolved event, and what the
// model spent is the output's _token_usage (or the error's).
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
