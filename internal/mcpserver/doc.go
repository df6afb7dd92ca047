// Package mcpserver is Skein as an MCP server (`skein mcp`): tools to
// validate, run, list, show, resume, cancel and signal runs, and each
// run's events as a resource, over stdio or streamable HTTP.
//
// It reaches runs only through the runner (internal/runner), as every
// front end does: where a run's nodes run is the runner's decision, and a
// tool error's code is the runner's error catalogue's (runner.Classify),
// the same code skein -o json and the HTTP API give for the same mistake.
package mcpserver
