package mcp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	"github.com/skeinhq/skein/workflow"
)

// LockUpdate is what UpdateLock wrote.
type LockUpdate struct {
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
	Changes []Change `json:"changes"`
}

// UpdateLock connects to every server in w's mcp_servers, lists
// its tools and writes the workflow's lock file with them, replacing what
// it held: the way to accept a tool that changed. A server that cannot be
// reached is an error and the lock file is left as it was.
func UpdateLock(ctx context.Context, w *workflow.Workflow, given map[string]any, secrets map[string]string) (*LockUpdate, error) {
	// Templates in the servers' definitions read the inputs given, else
	// their defaults, and the secrets.
	inputs := map[string]any{}
	for _, in := range w.Inputs {
		if in.Default != nil {
			inputs[in.Name] = in.Default
		}
	}
	maps.Copy(inputs, given)

	path := LockPath(w.File)
	old, err := ReadLock(path)
	if err != nil {
		old = &Lock{} // a broken lock is replaced whole
	}
	pool := NewPool(w.MCPServers, Scope(inputs, secrets))
	defer pool.Close()
	lock := &Lock{Version: LockVersion, Servers: map[string]map[string]PinnedTool{}}
	res := &LockUpdate{File: w.File, Lock: path, Servers: []LockServer{}, Dropped: []string{}}
	for _, s := range w.MCPServers {
		tools, err := pool.Tools(ctx, s.Name)
		if err != nil {
			return nil, fmt.Errorf("listing the tools of MCP server %q: %w; %s is unchanged", s.Name, err, path)
		}
		pins := PinAll(tools)
		lock.Servers[s.Name] = pins
		changes := Compare(old.Servers[s.Name], pins)
		if changes == nil {
			changes = []Change{}
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
	if err := WriteLock(path, w.File, lock); err != nil {
		return nil, fmt.Errorf("writing the lock file: %w", err)
	}
	return res, nil
}
