package llm_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Every goroutine a test starts (fake model servers, MCP sessions and the
// provider's connections to them) ends with the test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testModel is a model with a list price, so that cost is computed.
const testModel = "gpt-4.1-mini"

// noEnv hides the process environment from model resolution: SKEIN_LLM_*
// set on the machine must not redirect a test's calls.
func noEnv(string) (string, bool) { return "", false }

// models resolves the named model configs, each pointing at a fake server.
func models(servers map[string]*llmtest.Server, flavor llmtest.Flavor) *registry.Models {
	w := &workflow.Workflow{Name: "t"}
	for _, name := range []string{"default", "vision", "judge"} {
		srv, ok := servers[name]
		if !ok {
			continue
		}
		model := testModel
		if flavor == llmtest.Anthropic {
			model = "claude-haiku-4-5"
		}
		w.LLM = append(w.LLM, &workflow.LLMConfig{
			Name: name, Provider: string(flavor), Model: model, BaseURL: srv.BaseURL(), APIKey: "test-key",
		})
	}
	return registry.New(w, noEnv)
}

// event is one event a kind emitted.
type event struct {
	kind string
	data map[string]any
}

// events collects what a kind emits.
type events struct {
	mu   sync.Mutex
	list []event
}

func (e *events) emit(kind string, data map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.list = append(e.list, event{kind, data})
}

func (e *events) ofKind(kind string) []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []map[string]any
	for _, ev := range e.list {
		if ev.kind == kind {
			out = append(out, ev.data)
		}
	}
	return out
}

// bundle is what one call of a kind needs.
type bundle struct {
	call   *node.Call
	events *events
}

// setup builds a call of a kind with params, the models, and the extra
// services given (an MCP pool, a budget).
func setup(t *testing.T, ms *registry.Models, params map[string]any, services *node.Services) *bundle {
	t.Helper()
	ev := &events{}
	if _, ok := node.BudgetService.Lookup(services); !ok {
		services = node.BudgetService.Provide(services, &engine.Budget{}) // the engine always gives one
	}
	svc := registry.Service.Provide(services, ms)
	secrets := map[string]string{"TOKEN": "s3cr3t-token"}
	run := t.TempDir()
	return &bundle{events: ev, call: &node.Call{
		RunID: "r1", NodeID: "n", Visit: 1, Attempt: 1, IdempotencyKey: "r1/n/1",
		Params:      params,
		Emit:        ev.emit,
		Redact:      engine.Redactor(secrets),
		ArtifactDir: filepath.Join(run, "n", "artifacts"),
		Files:       node.NewFiles(run, run), // the run's folder only
		Eval:        func(string) (any, error) { return nil, nil },
		Now:         time.Now,
		Services:    svc,
	}}
}

// run runs kind once with a deadline, as the engine would.
func (b *bundle) run(t *testing.T, kind node.Kind) (map[string]any, *node.Error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := kind.Run(ctx, b.call)
	return out, node.AsError(err)
}

// installCommand installs the npm MCP servers the tests run.
const installCommand = "npm ci --prefix internal/mcp/testdata"

// everythingServer is @modelcontextprotocol/server-everything, installed
// under internal/mcp/testdata. Without it (or node) the test is skipped, or
// fails when CI=true: CI must run these tests.
func everythingServer(t *testing.T) *workflow.MCPServer {
	t.Helper()
	missing := func(what string) {
		t.Helper()
		msg := fmt.Sprintf("%s; install the MCP test servers from the repository root with: %s", what, installCommand)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not in PATH")
	}
	bin, err := filepath.Abs(filepath.Join("..", "..", "mcp", "testdata", "node_modules", ".bin", "mcp-server-everything"))
	require.NoError(t, err)
	if _, err := os.Stat(bin); err != nil {
		missing(bin + " is missing")
	}
	return &workflow.MCPServer{Name: "everything", Command: bin, Args: []string{"stdio"}}
}

// everythingPool is a pool over the everything server, closed when the
// test ends.
func everythingPool(t *testing.T) *mcp.Pool {
	t.Helper()
	pool := mcp.NewPool([]*workflow.MCPServer{everythingServer(t)}, mcp.Scope(nil, nil))
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	return pool
}
