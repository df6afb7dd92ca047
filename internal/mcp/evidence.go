package mcp

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/workflow"
)

// EvidenceHook calls the workflow's evidence tool after a checked node
// succeeds and saves the images it returns as evidence-N.<ext> in the
// node's artifacts, where the judge finds them.
func EvidenceHook(w *workflow.Workflow, pool *Pool) func(ctx context.Context, nodeID, dir string) {
	if w.Evidence == nil || w.Evidence.Server == "" || pool == nil {
		return nil
	}
	ev := w.Evidence
	return func(ctx context.Context, nodeID, dir string) {
		if dir == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		res, err := pool.CallTool(ctx, ev.Server, ev.Tool, ev.Arguments)
		if err != nil || res == nil {
			return
		}
		n := 0
		for _, c := range res.Content {
			img, ok := c.(*sdk.ImageContent)
			if !ok {
				continue
			}
			n++
			ext := ".png"
			if img.MIMEType == "image/jpeg" {
				ext = ".jpg"
			}
			_ = os.MkdirAll(dir, 0o755)
			_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("evidence-%d%s", n, ext)), img.Data, 0o644)
		}
	}
}
