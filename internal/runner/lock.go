package runner

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	mcppool "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// LockRequest asks UpdateLock to pin a workflow's MCP tools again.
type LockRequest struct {
	// File is the workflow file; its lock file is mcp.LockPath(File).
	File string
	// LookupEnv reads the environment for secrets; nil is os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// SecretsFile is a dotenv file with secret values, as skein run takes.
	SecretsFile string
	// Inputs are given to templates in the servers' definitions; inputs
	// not given take their defaults.
	Inputs map[string]any
}

// LockResult is what UpdateLock wrote.
type LockResult struct {
	File string `json:"file"`
	// Lock is the lock file written; "" when the workflow has no
	// mcp_servers, and so no lock file.
	Lock    string       `json:"lock"`
	Servers []LockServer `json:"servers"`
	// Dropped lists servers the old lock pinned that the workflow no
	// longer declares.
	Dropped []string `json:"dropped"`
}

// LockServer is one server's pins after UpdateLock.
type LockServer struct {
	Name  string `json:"name"`
	Tools int    `json:"tools"`
	// Changes are the differences from the old lock; a server the old
	// lock did not have lists every tool as new.
	Changes []mcppool.Change `json:"changes"`
}

// UpdateLock connects to every server in a workflow's mcp_servers, lists
// its tools and writes the workflow's lock file with them, replacing what
// it held: the way to accept a tool that changed. A server that cannot be
// reached is an error and the lock file is left as it was.
func UpdateLock(ctx context.Context, reg *node.Registry, req LockRequest) (*LockResult, error) {
	if reg == nil {
		reg = node.Default
	}
	w, ds := workflow.Load(req.File, reg)
	if w == nil || ds.HasErrors() {
		return nil, &InvalidError{File: req.File, Diagnostics: ds}
	}
	secrets, err := resolveSecrets(w, req.LookupEnv, req.SecretsFile)
	if err != nil {
		return nil, err
	}
	inputs := map[string]any{}
	for _, in := range w.Inputs {
		if in.Default != nil {
			inputs[in.Name] = in.Default
		}
	}
	maps.Copy(inputs, req.Inputs)

	path := mcppool.LockPath(req.File)
	old, err := mcppool.ReadLock(path)
	if err != nil {
		old = &mcppool.Lock{} // a broken lock is replaced whole
	}
	pool := mcppool.NewPool(w.MCPServers, mcppool.Scope(inputs, secrets))
	defer pool.Close()
	lock := &mcppool.Lock{Version: mcppool.LockVersion, Servers: map[string]map[string]mcppool.PinnedTool{}}
	res := &LockResult{File: req.File, Lock: path, Servers: []LockServer{}, Dropped: []string{}}
	for _, s := range w.MCPServers {
		tools, err := pool.Tools(ctx, s.Name)
		if err != nil {
			return nil, fmt.Errorf("listing the tools of MCP server %q: %w; %s is unchanged", s.Name, err, path)
		}
		pins := mcppool.PinAll(tools)
		lock.Servers[s.Name] = pins
		changes := mcppool.Compare(old.Servers[s.Name], pins)
		if changes == nil {
			changes = []mcppool.Change{}
		}
		res.Servers = append(res.Servers, LockServer{Name: s.Name, Tools: len(pins), Changes: changes})
	}
	slices.SortFunc(res.Servers, func(a, b LockServer) int { return cmp.Compare(a.Name, b.Name) })
	for _, name := range slices.Sorted(maps.Keys(old.Servers)) {
		if _, ok := lock.Servers[name]; !ok {
			res.Dropped = append(res.Dropped, name)
		}
	}
	if len(w.MCPServers) == 0 {
		// Nothing to pin: no lock file (one left from servers the
		// workflow no longer declares goes).
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("removing the lock file: %w", err)
		}
		res.Lock = ""
		return res, nil
	}
	if err := mcppool.WriteLock(path, req.File, lock); err != nil {
		return nil, fmt.Errorf("writing the lock file: %w", err)
	}
	return res, nil
}
