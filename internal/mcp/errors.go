package mcp

import (
	"errors"
	"fmt"

	"github.com/skeinhq/skein/node"
)

// Error categories of MCP failures (node.Error.Category).
const (
	// CategoryStart: the server could not be started or connected to.
	CategoryStart = "mcp_start"
	// CategoryProtocol: the server died, dropped the connection or answered
	// with a protocol error.
	CategoryProtocol = "mcp_protocol"
	// CategoryToolError: the tool ran and reported an error.
	CategoryToolError = "mcp_tool_error"
)

// ErrClosed is returned by a Pool used after Close.
var ErrClosed = errors.New("the MCP pool is closed")

// startError is an mcp_start error of server s.
func startError(s, code string, permanent bool, stderr string, format string, args ...any) *node.Error {
	e := node.Failf(CategoryStart, code, "MCP server %q: "+format, append([]any{s}, args...)...)
	e.Permanent = permanent
	e.Details = details(s, stderr)
	return e
}

// protocolError is an mcp_protocol error of server s.
func protocolError(s, code string, err error, stderr string, format string, args ...any) *node.Error {
	e := node.Failf(CategoryProtocol, code, "MCP server %q: "+format, append([]any{s}, args...)...)
	e.Err = err
	e.Details = details(s, stderr)
	return e
}

func details(server, stderr string) map[string]any {
	d := map[string]any{"server": server}
	if stderr != "" {
		d["stderr"] = stderr
	}
	return d
}

// unknownServer is the error for a server the pool was not given.
func unknownServer(name string) *node.Error {
	return &node.Error{
		Code: "unknown_server", Category: node.CategoryValidation, Permanent: true,
		Message: fmt.Sprintf("MCP server %q is not declared in mcp_servers", name),
		Details: map[string]any{"server": name},
	}
}
