package runner

import (
	"context"
	"os"

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
type LockResult = mcppool.LockUpdate

// UpdateLock loads a workflow, reads its secrets and writes its lock file
// afresh (mcp.UpdateLock): the way to accept a tool that changed. A server
// that cannot be reached is an error and the lock file is left as it was.
func UpdateLock(ctx context.Context, reg *node.Registry, req LockRequest) (*LockResult, error) {
	if reg == nil {
		reg = node.Default
	}
	w, ds := workflow.Load(req.File, reg)
	if w == nil || ds.HasErrors() {
		return nil, &InvalidError{File: req.File, Diagnostics: ds}
	}
	if req.LookupEnv == nil {
		req.LookupEnv = os.LookupEnv
	}
	secrets, err := resolveSecrets(w, req.LookupEnv, req.SecretsFile)
	if err != nil {
		return nil, err
	}
	return mcppool.UpdateLock(ctx, w, req.Inputs, secrets)
}
