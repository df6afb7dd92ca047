// Package nodes holds the built-in node kinds, one package per kind under
// it (control, data, http, llm, mcp, shell, trigger); node/standard
// registers them all.
//
// A kind is a plugin under the engine: it sees a run only through the
// node.Call it is given and the services on it (the run's models, memory,
// MCP servers, budget, clock). So no package under internal/nodes imports
// the verification pass (internal/check), the application layer
// (internal/runner) or the engine, and none imports a store; the test in
// this package holds every kind to it.
package nodes
