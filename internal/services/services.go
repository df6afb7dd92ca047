// Package services assembles the typed services (node.Services) the node
// kinds of one run get: the HTTP policy, the run's MCP servers, its models
// (their templates rendered with its secrets), its memory, the lock of
// pinned tools, and, when the run records or replays, the cassette every
// interaction goes through.
package services

import (
	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/llm/registry"
	mcppool "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/memory"
	httpkind "github.com/skeinhq/skein/internal/nodes/http"
	mcpkind "github.com/skeinhq/skein/internal/nodes/mcp"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Build returns the services the kinds of one run get: the HTTP policy,
// the run's MCP servers, its models, its memory (memory:), and the models
// as the judge.
func Build(pol httpkind.Policy, w *workflow.Workflow, pool *mcppool.Pool, models *registry.Models, mem memory.Store) *node.Services {
	s := httpkind.PolicyService.Provide(nil, pol)
	s = mcppool.Service.Provide(s, pool)
	if w.File != "" {
		// The tools a node uses are checked against the lock file beside
		// the workflow, read afresh for each run.
		s = mcppool.LockService.Provide(s, mcppool.NewPins(w.File))
	}
	s = registry.Service.Provide(s, models)
	s = memory.Service.Provide(s, mem)
	// resolve: arguments of mcp nodes are picked by the workflow's models
	// and kept for the run.
	s = mcpkind.PickerService.Provide(s, models)
	s = mcpkind.ResolutionsService.Provide(s, mcpkind.NewResolutions())
	return node.JudgeService.Provide(s, models)
}

// Config is what the services of a run read besides its workflow.
type Config struct {
	// Store keeps the memory of llm and agent nodes.
	Store     store.Store
	LookupEnv func(string) (string, bool)
	Secrets   map[string]string
	// DenyPrivate makes http nodes refuse private addresses.
	DenyPrivate bool
	// Tape, when set, records the run's interactions or answers them.
	Tape *cassette.Tape
}

// ForRun returns the services of a run of w with inputs, and its MCP
// servers, which start on first use and stop when close is called.
// replaces is the run a rerun re-runs (its memory turns are replaced).
func ForRun(w *workflow.Workflow, inputs map[string]any, replaces string, c Config) (s *node.Services, pool *mcppool.Pool, close func()) {
	pool = mcppool.NewPool(w.MCPServers, mcppool.Scope(inputs, c.Secrets))
	models := registry.New(w, c.LookupEnv)
	models.Render = secrets.Renderer(c.Secrets)
	s = Build(httpkind.Policy{DenyPrivate: c.DenyPrivate}, w, pool, models,
		Taped(Memory{Store: c.Store, Workflow: w.Name, Replaces: replaces}, c.Tape))
	if c.Tape != nil {
		pool.Tape, models.HTTPClient = c.Tape, c.Tape.Client()
		s = node.ClockService.Provide(cassette.Service.Provide(s, c.Tape), c.Tape)
	}
	return s, pool, func() { _ = pool.Close() }
}

// Child returns the services of a child run of cw (a subworkflow node's):
// the servers and models its own file declares, its interactions under
// the parent's tape, scoped to it.
func (c Config) Child(cw *workflow.Workflow, inputs map[string]any) (*node.Services, func()) {
	if c.Tape != nil {
		c.Tape = c.Tape.Scoped(cw.Name)
	}
	s, _, close := ForRun(cw, inputs, "", c)
	return s, close
}
