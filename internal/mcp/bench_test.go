package mcp_test

import (
	"context"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// BenchmarkEcho measures one call of the everything server's echo on a warm
// session, directly through the SDK (sdk) and through the mcp kind (kind:
// tool lookup, schema check, events, result conversion). The difference is
// Skein's overhead per MCP call; paired runs both in turn so that drift in
// the server's speed on a shared machine hits both alike.
func BenchmarkEcho(b *testing.B) {
	p := servers(b)
	marker := newMarker(b)
	pool := mcp.NewPool([]*workflow.MCPServer{p.everythingServer(marker)}, nil)
	b.Cleanup(func() {
		_ = pool.Close()
		requireNoSurvivors(b, marker)
	})
	ctx := context.Background()
	cs, err := pool.Session(ctx, "everything")
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"message": "hello"}
	k, _ := node.Default.New("mcp")
	call := &node.Call{
		RunID: "r", NodeID: "n", Visit: 1, Attempt: 1,
		Params:      map[string]any{"server": "everything", "tool": "echo", "arguments": args},
		Emit:        func(string, map[string]any) {},
		Redact:      func(s string) string { return s },
		ArtifactDir: b.TempDir(),
		Now:         time.Now,
		Services:    mcp.Service.Provide(nil, pool),
	}
	viaSDK := func(b *testing.B) {
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "echo", Arguments: args})
		if err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
	viaKind := func(b *testing.B) {
		out, err := k.Run(ctx, call)
		if err != nil || out["text"] != "Echo: hello" {
			b.Fatal(err, out)
		}
	}
	viaKind(b) // warm: tools listed, schema compiled

	b.Run("sdk", func(b *testing.B) {
		for b.Loop() {
			viaSDK(b)
		}
		perCall(b)
	})
	b.Run("kind", func(b *testing.B) {
		for b.Loop() {
			viaKind(b)
		}
		perCall(b)
	})
	b.Run("paired", func(b *testing.B) {
		var direct, kind time.Duration
		for b.Loop() {
			t0 := time.Now()
			viaSDK(b)
			t1 := time.Now()
			viaKind(b)
			direct += t1.Sub(t0)
			kind += time.Since(t1)
		}
		n := float64(b.N)
		b.ReportMetric(float64(direct.Microseconds())/n, "sdk-µs/call")
		b.ReportMetric(float64(kind.Microseconds())/n, "kind-µs/call")
		b.ReportMetric(float64((kind-direct).Microseconds())/n, "overhead-µs/call")
	})
}

func perCall(b *testing.B) {
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/call")
}
