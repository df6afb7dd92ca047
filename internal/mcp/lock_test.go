package mcp_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/internal/mcp/mcptest"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

func noop(context.Context, map[string]any) (*sdk.CallToolResult, error) {
	return mcptest.Text("ok"), nil
}

func TestLockPath(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"flows/a.yaml": "flows/a.skein.lock",
		"a.yml":        "a.skein.lock",
		"/x/b.json":    "/x/b.skein.lock",
		"c":            "c.skein.lock",
	} {
		require.Equal(t, want, mcp.LockPath(in), in)
	}
}

// The lock file lists servers and tools in name order, whatever the order
// the server listed them in, and reads back as written.
func TestLockFileIsStable(t *testing.T) {
	t.Parallel()
	tool := func(name, desc string, schema any) *mcp.Tool {
		return &mcp.Tool{Server: "s", Tool: &sdk.Tool{Name: name, Description: desc, InputSchema: schema}}
	}
	// The same schema with its keys in another order hashes the same.
	a := mcp.Pin(tool("t", "d", map[string]any{"type": "object", "required": []any{"x"}}))
	b := mcp.Pin(tool("t", "d", map[string]any{"required": []any{"x"}, "type": "object"}))
	require.Equal(t, a, b)

	l := &mcp.Lock{Version: mcp.LockVersion, Servers: map[string]map[string]mcp.PinnedTool{
		"zeta":  mcp.PinAll([]*mcp.Tool{tool("b", "B", nil), tool("a: odd name", "A", nil)}),
		"alpha": {},
	}}
	text := string(l.Marshal("dir/flow.yaml"))
	require.Equal(t, text, string(l.Marshal("dir/flow.yaml")))
	require.Regexp(t, `(?s)^# MCP tools pinned for flow.yaml.*skein lock update flow.yaml\nversion: 1\nservers:\n  "alpha": \{\}\n  "zeta":\n    "a: odd name":\n      description: sha256:[0-9a-f]{64}\n      input_schema: sha256:[0-9a-f]{64}\n    "b":\n`, text)

	path := filepath.Join(t.TempDir(), "flow.skein.lock")
	require.NoError(t, mcp.WriteLock(path, "flow.yaml", l))
	back, err := mcp.ReadLock(path)
	require.NoError(t, err)
	require.Equal(t, l, back)
}

func TestReadLockErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing, err := mcp.ReadLock(filepath.Join(dir, "none.skein.lock"))
	require.NoError(t, err, "no lock file is an empty lock")
	require.Empty(t, missing.Servers)

	bad := filepath.Join(dir, "bad.skein.lock")
	require.NoError(t, os.WriteFile(bad, []byte("version: 1\nservers: [1, 2]\n"), 0o644))
	_, err = mcp.ReadLock(bad)
	require.ErrorContains(t, err, "lock file "+bad+" is not valid")
	require.ErrorContains(t, err, "run skein lock update")

	unknown := filepath.Join(dir, "unknown.skein.lock")
	require.NoError(t, os.WriteFile(unknown, []byte("version: 1\nserver: {}\n"), 0o644))
	_, err = mcp.ReadLock(unknown)
	require.ErrorContains(t, err, "lock file "+unknown+" is not valid", "a misspelt key is an error, not an empty lock")
	require.ErrorContains(t, err, "server")

	empty := filepath.Join(dir, "empty.skein.lock")
	require.NoError(t, os.WriteFile(empty, nil, 0o644))
	_, err = mcp.ReadLock(empty)
	require.ErrorContains(t, err, "lock file "+empty+" has version 0; this Skein reads version 1")
}

// pinsBundle is a test server with two tools, a pool and the pins of a
// workflow file.
type pinsBundle struct {
	srv  *mcptest.Server
	pool *mcp.Pool
}

func pinsSetup(t *testing.T) *pinsBundle {
	t.Helper()
	srv := mcptest.New(t)
	srv.AddDescribedTool("read", "Reads.", nil, noop)
	srv.AddDescribedTool("write", "Writes.", nil, noop)
	pool := mcp.NewPool([]*workflow.MCPServer{{Name: "files", URL: srv.URL}}, nil)
	t.Cleanup(func() { require.NoError(t, pool.Close()) })
	return &pinsBundle{srv: srv, pool: pool}
}

// check runs one run's check of tool, with a fresh pool cache.
func (b *pinsBundle) check(t *testing.T, pins *mcp.Pins, tool string, warn func(string)) error {
	t.Helper()
	ctx := context.Background()
	b.pool.Evict("files")
	tl, err := b.pool.Tool(ctx, "files", tool)
	require.NoError(t, err)
	return pins.Check(ctx, b.pool, "files", []*mcp.Tool{tl}, warn)
}

func TestPinsNewTool(t *testing.T) {
	t.Parallel()
	b := pinsSetup(t)
	flow := filepath.Join(t.TempDir(), "flow.yaml")
	require.NoError(t, b.check(t, mcp.NewPins(flow), "read", nil))

	b.srv.AddDescribedTool("delete", "Deletes.", nil, noop)
	require.NoError(t, b.check(t, mcp.NewPins(flow), "read", nil), "a new tool no node uses blocks nothing")
	err := node.AsError(b.check(t, mcp.NewPins(flow), "delete", nil))
	require.NotNil(t, err)
	require.Equal(t, "mcp_tool_changed", err.Code)
	require.True(t, err.Permanent)
	require.Contains(t, err.Message, `tool "delete" is not in the lock file (the server added it)`)
	require.Equal(t, []any{map[string]any{"tool": "delete", "what": []any{"new"}}}, err.Details["changes"])
}

// When the lock file cannot be written, the run is warned once and goes
// on; its later checks use the pins it took.
func TestPinsUnwritableFolder(t *testing.T) {
	t.Parallel()
	b := pinsSetup(t)
	flow := filepath.Join(t.TempDir(), "gone", "flow.yaml") // a folder that does not exist cannot be written to
	pins := mcp.NewPins(flow)
	var warnings []string
	warn := func(m string) { warnings = append(warnings, m) }
	require.NoError(t, b.check(t, pins, "read", warn))
	require.NoError(t, b.check(t, pins, "write", warn))
	require.Len(t, warnings, 1)
	require.Contains(t, warnings[0], `the tools of MCP server "files" are not pinned: writing `+mcp.LockPath(flow)+" failed")
	require.Contains(t, warnings[0], "Run skein lock update "+flow+" where the folder is writable")

	b.srv.AddDescribedTool("read", "Reads, differently.", nil, noop)
	err := node.AsError(b.check(t, pins, "read", warn))
	require.NotNil(t, err, "the rest of the run checks against what it pinned")
	require.Equal(t, "mcp_tool_changed", err.Code)
}

func TestPinsBrokenLockFile(t *testing.T) {
	t.Parallel()
	b := pinsSetup(t)
	dir := t.TempDir()
	flow := filepath.Join(dir, "flow.yaml")
	require.NoError(t, os.WriteFile(mcp.LockPath(flow), []byte("version: 7\nservers: {}\n"), 0o644))
	err := node.AsError(b.check(t, mcp.NewPins(flow), "read", nil))
	require.NotNil(t, err)
	require.Equal(t, "mcp_lock", err.Code)
	require.Contains(t, err.Message, "has version 7; this Skein reads version 1")
}

// Whatever a lock file holds, reading it never panics, and a lock that
// reads writes back to a file that reads the same.
func FuzzReadLock(f *testing.F) {
	f.Add([]byte("version: 1\nservers:\n  \"fs\":\n    \"read\":\n      description: sha256:aa\n      input_schema: sha256:bb\n"))
	f.Add([]byte("version: 1\nservers: {}\n"))
	f.Add([]byte("version: 2\n"))
	f.Add([]byte("servers: [1]\n"))
	f.Add([]byte("{\"version\": 1, \"servers\": {\"a: b\": {\"-x\": {\"description\": \"\", \"input_schema\": \"\"}}}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, "f.skein.lock")
		require.NoError(t, os.WriteFile(path, data, 0o644))
		l, err := mcp.ReadLock(path)
		if err != nil {
			return
		}
		require.NoError(t, mcp.WriteLock(path, "f.yaml", l))
		back, err := mcp.ReadLock(path)
		require.NoError(t, err, "%s", l.Marshal("f.yaml"))
		require.Equal(t, l, back)
	})
}

// A lock file that is a symlink leading out of its workflow's folder is
// neither read nor written: the pins would not be the workflow's, and
// writing them would change a file outside the project. A lock in the
// folder (or a symlink that stays in it) works.
func TestLockFileStaysInItsFolder(t *testing.T) {
	t.Parallel()
	top := t.TempDir()
	dir, outside := filepath.Join(top, "project"), filepath.Join(top, "outside")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "pins"), 0o755))
	require.NoError(t, os.MkdirAll(outside, 0o755))
	victim := filepath.Join(outside, "victim.lock")
	require.NoError(t, os.WriteFile(victim, []byte("version: 1\nservers: {}\n"), 0o644))
	lock := &mcp.Lock{Version: mcp.LockVersion, Servers: map[string]map[string]mcp.PinnedTool{"s": {}}}

	for _, tc := range []struct{ name, target string }{
		{"a symlink to an absolute path outside", victim},
		{"a symlink through ..", "../outside/victim.lock"},
		{"a dangling symlink out", filepath.Join(outside, "made.lock")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sub := t.TempDir()
			wf := filepath.Join(sub, "flow.yaml")
			// The link's relative target is read from its own folder.
			target := tc.target
			if !filepath.IsAbs(target) {
				require.NoError(t, os.MkdirAll(filepath.Join(sub, "..", "outside"), 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(sub, "..", "outside", "victim.lock"), []byte("version: 1\nservers: {}\n"), 0o644))
			}
			require.NoError(t, os.Symlink(target, mcp.LockPath(wf)))

			_, err := mcp.ReadLock(mcp.LockPath(wf))
			require.Error(t, err)
			require.Contains(t, err.Error(), `"flow.skein.lock" leads through a symlink to`)
			require.Contains(t, err.Error(), "the folder of its workflow; replace the symlink with the lock file itself")

			err = mcp.WriteLock(mcp.LockPath(wf), wf, lock)
			require.Error(t, err)
			require.ErrorIs(t, err, workflow.ErrPathEscapes)
			if filepath.IsAbs(target) {
				got, err := os.ReadFile(victim)
				require.NoError(t, err)
				require.Equal(t, "version: 1\nservers: {}\n", string(got), "the file outside is unchanged")
				require.NoFileExists(t, filepath.Join(outside, "made.lock"))
			} else {
				got, err := os.ReadFile(filepath.Join(sub, "..", "outside", "victim.lock"))
				require.NoError(t, err)
				require.Equal(t, "version: 1\nservers: {}\n", string(got), "the file outside is unchanged")
			}
		})
	}

	t.Run("a symlink that stays in the folder", func(t *testing.T) {
		t.Parallel()
		wf := filepath.Join(dir, "flow.yaml")
		require.NoError(t, mcp.WriteLock(filepath.Join(dir, "pins", "flow.skein.lock"), wf, lock))
		require.NoError(t, os.Symlink(filepath.Join("pins", "flow.skein.lock"), mcp.LockPath(wf)))
		got, err := mcp.ReadLock(mcp.LockPath(wf))
		require.NoError(t, err)
		require.Contains(t, got.Servers, "s")
	})
}
