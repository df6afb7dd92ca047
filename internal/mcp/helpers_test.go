package mcp_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/proc/proctest"
	"github.com/skeinhq/skein/node"
	_ "github.com/skeinhq/skein/node/standard"
	"github.com/skeinhq/skein/workflow"
)

// installCommand installs the npm servers the tests run.
const installCommand = "npm ci --prefix internal/mcp/testdata"

// markerVar is the environment variable that tags every process a test
// starts, so that survivors can be found whatever their pid or group.
const markerVar = "SKEIN_TEST_MARKER"

// paths of the real servers.
type paths struct {
	node       string // the node program
	everything string // .bin/mcp-server-everything
	filesystem string // server-filesystem's dist entry
	faulty     string // testdata/faulty.js
}

// servers finds node and the installed npm servers. Without them the test
// is skipped, or fails when CI=true: CI must run these tests.
func servers(t testing.TB) paths {
	t.Helper()
	td, err := filepath.Abs("testdata")
	require.NoError(t, err)
	missing := func(what string) {
		t.Helper()
		msg := fmt.Sprintf("%s; install the MCP test servers from the repository root with: %s", what, installCommand)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	nodeBin, err := exec.LookPath("node")
	if err != nil {
		missing("node is not in PATH")
	}
	p := paths{
		node:       nodeBin,
		everything: filepath.Join(td, "node_modules", ".bin", "mcp-server-everything"),
		filesystem: filepath.Join(td, "node_modules", "@modelcontextprotocol", "server-filesystem", "dist", "index.js"),
		faulty:     filepath.Join(td, "faulty.js"),
	}
	for _, f := range []string{p.everything, p.filesystem} {
		if _, err := os.Stat(f); err != nil {
			missing(fmt.Sprintf("%s is missing", f))
		}
	}
	return p
}

func newMarker(t testing.TB) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "skein-mcp-test-" + hex.EncodeToString(b[:])
}

func (p paths) everythingServer(marker string) *workflow.MCPServer {
	return &workflow.MCPServer{Name: "everything", Command: p.everything, Args: []string{"stdio"},
		Env: map[string]string{markerVar: marker}}
}

func (p paths) filesystemServer(marker, root string) *workflow.MCPServer {
	return &workflow.MCPServer{Name: "fs", Command: p.node, Args: []string{p.filesystem, root},
		Env: map[string]string{markerVar: marker}}
}

func (p paths) faultyServer(marker string, flags ...string) *workflow.MCPServer {
	return &workflow.MCPServer{Name: "faulty", Command: p.node, Args: append([]string{p.faulty}, flags...),
		Env: map[string]string{markerVar: marker}}
}

// requireNoSurvivors fails when a process tagged with marker is alive.
func requireNoSurvivors(t testing.TB, marker string) {
	t.Helper()
	require.Empty(t, proctest.Survivors(markerVar, marker), "processes started by the test are still running")
}

// bundle is what most tests need: a pool over some servers whose
// processes are checked for leaks when the test ends.
type bundle struct {
	pool   *mcp.Pool
	marker string
	paths  paths
}

func setup(t *testing.T, build func(p paths, marker string) []*workflow.MCPServer) *bundle {
	t.Helper()
	p := servers(t)
	marker := newMarker(t)
	pool := mcp.NewPool(build(p, marker), mcp.Scope(map[string]any{"who": "world"}, map[string]string{"TOKEN": "s3cr3t-token"}))
	t.Cleanup(func() {
		require.NoError(t, pool.Close())
		requireNoSurvivors(t, marker)
	})
	return &bundle{pool: pool, marker: marker, paths: p}
}

// recorder keeps a run's events.
type recorder struct {
	mu     sync.Mutex
	events []engine.TimedEvent
}

func (r *recorder) Step(*engine.StepRecord) error { return nil }
func (r *recorder) Event(ev engine.TimedEvent) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, ev)
	return nil
}

func (r *recorder) ofType(typ string) []engine.TimedEvent {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []engine.TimedEvent
	for _, ev := range r.events {
		if ev.Type == typ {
			out = append(out, ev)
		}
	}
	return out
}

// run is one workflow run through the engine with a pool, as skein run
// does it.
type run struct {
	res       *engine.Result
	rec       *recorder
	artifacts string
}

// runWorkflow decodes, validates and runs src with a pool over its
// mcp_servers, closes the pool and checks that nothing it started survives.
func runWorkflow(t *testing.T, src string, inputs map[string]any, secrets map[string]string, marker string) *run {
	t.Helper()
	w, ds := workflow.Decode("test.yaml", []byte(src))
	require.NotNil(t, w, ds.Error())
	ds = append(ds, workflow.Validate(w, node.Default)...)
	require.False(t, ds.HasErrors(), ds.Error())
	return execute(t, w, inputs, secrets, marker)
}

// execute runs a valid workflow as skein run does: with a pool over its
// mcp_servers, closed when the run ends.
func execute(t *testing.T, w *workflow.Workflow, inputs map[string]any, secrets map[string]string, marker string) *run {
	t.Helper()
	in, err := w.ResolveInputs(inputs)
	require.NoError(t, err)
	plan, err := engine.NewPlan(w, node.Default)
	require.NoError(t, err)
	pool := mcp.NewPool(w.MCPServers, mcp.Scope(in, secrets))
	arts := t.TempDir()
	rec := &recorder{}
	res, err := engine.NewDriver(node.Default, nil, 8).Execute(context.Background(), plan, engine.Options{
		RunID: "r1", Inputs: in, Secrets: secrets,
		Host: engine.Host{
			Recorder:    rec,
			ArtifactDir: func(id string) string { return filepath.Join(arts, id, "artifacts") },
			Services:    mcp.Service.Provide(nil, pool),
		},
	})
	require.NoError(t, err)
	require.NoError(t, pool.Close())
	if marker != "" {
		requireNoSurvivors(t, marker)
	}
	return &run{res: res, rec: rec, artifacts: arts}
}

// step returns the record of a node's last step.
func (r *run) step(t *testing.T, id string) *engine.StepRecord {
	t.Helper()
	var last *engine.StepRecord
	for _, s := range r.res.Steps {
		if s.Node == id {
			last = s
		}
	}
	require.NotNil(t, last, "node %s has no step", id)
	return last
}

// q quotes a string for YAML.
func q(s string) string { return strconv.Quote(s) }

// within fails when fn took longer than d: a safety net for a call that
// would otherwise never return, not a measure of how fast it is.
func within(t *testing.T, d time.Duration, what string, fn func()) {
	t.Helper()
	start := time.Now()
	fn()
	require.LessOrEqual(t, time.Since(start), d, "%s took too long", what)
}

// event is one event a kind emitted.
type event struct {
	kind string
	data map[string]any
}

// called is the outcome of one run of the mcp kind.
type called struct {
	out    map[string]any
	err    *node.Error
	events []event
	took   time.Duration
}

// callKind runs the mcp kind once, as the engine would, with ctx bounding
// the attempt.
func callKind(ctx context.Context, t *testing.T, pool *mcp.Pool, server, tool string, args map[string]any, attempt int) *called {
	t.Helper()
	var mu sync.Mutex
	c := &called{}
	call := &node.Call{
		RunID: "r1", NodeID: "n", Visit: 1, Attempt: attempt, IdempotencyKey: "r1/n/1",
		Params: map[string]any{"server": server, "tool": tool, "arguments": args},
		Emit: func(kind string, data map[string]any) {
			mu.Lock()
			defer mu.Unlock()
			c.events = append(c.events, event{kind, data})
		},
		Redact:      engine.Redactor(map[string]string{"TOKEN": "s3cr3t-token"}),
		ArtifactDir: t.TempDir(),
		Eval:        func(string) (any, error) { return nil, nil },
		Now:         time.Now,
		Services:    mcp.Service.Provide(nil, pool),
	}
	k, ok := node.Default.New("mcp")
	require.True(t, ok, "the mcp kind is registered")
	start := time.Now()
	out, err := k.Run(ctx, call)
	c.took = time.Since(start)
	c.out = out
	c.err = node.AsError(err)
	return c
}
