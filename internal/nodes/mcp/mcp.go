package mcp

import (
	"context"
	"fmt"
	"maps"
	"strings"

	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
)

// MCP runs mcp nodes. It holds no state: sessions live in the run's pool.
type MCP struct{}

// Interface guard.
var _ node.Kind = (*MCP)(nil)

// Run calls the node's tool once and returns its result as the node's
// output (see the package documentation). What resolving its arguments
// spent on a model is the output's _token_usage, or the error's.
func (k *MCP) Run(ctx context.Context, call *node.Call) (map[string]any, error) {
	var spent usage
	out, err := k.run(ctx, call, &spent)
	if !spent.any {
		return out, err
	}
	if err != nil {
		return nil, withUsage(err, &spent)
	}
	out["_token_usage"] = spent.directive()
	return out, nil
}

func (k *MCP) run(ctx context.Context, call *node.Call, spent *usage) (map[string]any, error) {
	server, tool := call.String("server"), call.String("tool")
	if server == "" || tool == "" {
		return nil, &node.Error{Code: "invalid_params", Category: node.CategoryValidation, Permanent: true,
			Message: "an mcp node needs a server and a tool"}
	}
	args := call.Map("arguments") // coerced: a map, or none
	if args == nil {
		args = map[string]any{}
	}
	pool, err := mcpclient.Service.Get(call)
	if err != nil {
		return nil, err
	}
	specs, err := resolveSpecs(args, server)
	if err != nil {
		return nil, err
	}
	if call.Attempt > 1 {
		pool.Evict(server) // DESIGN §2.5: caches go before a retry
	}
	// The tool is checked before anything is spent on resolving.
	t, err := pool.Tool(ctx, server, tool)
	if err != nil {
		return nil, err
	}
	if pins, ok := mcpclient.LockService.Lookup(call.Services); ok {
		if err := pins.Check(ctx, pool, server, []*mcpclient.Tool{t}, warner(call)); err != nil {
			return nil, err
		}
	}
	cache, ok := ResolutionsService.Lookup(call.Services)
	if !ok {
		cache = NewResolutions() // no run to keep them for: this call's
	}
	if call.Attempt > 1 {
		cache.evictFor(server, tool, specs) // a retry resolves afresh
		for _, s := range specs {
			pool.Evict(s.server)
		}
	}
	if len(specs) > 0 {
		args = maps.Clone(args)
		r := &resolver{call: call, pool: pool, cache: cache, spent: spent}
		if err := r.resolve(ctx, args, specs); err != nil {
			return nil, err
		}
	}
	if err := t.CheckArguments(args); err != nil {
		return nil, err
	}

	call.Emit("tool_call", map[string]any{"server": server, "tool": tool, "arguments": node.RedactValue(args, call.Redact)})
	start := call.Now()
	res, err := pool.CallToolProgress(ctx, server, tool, args, progressEvents(call, server, tool))
	ms := call.Now().Sub(start).Milliseconds()
	if err != nil {
		call.Emit("tool_result", map[string]any{
			"server": server, "tool": tool, "duration_ms": ms, "is_error": true, "images": 0, "text": "",
			"error": call.Redact(node.AsError(err).Message),
		})
		return nil, err
	}
	r := readResult(res)
	text := call.Redact(r.text) // before clipping, so no secret is cut in two
	ev := map[string]any{
		"server": server, "tool": tool, "duration_ms": ms, "is_error": res.IsError,
		"images": r.images, "text": clip(text, eventTextLimit),
	}
	if len(text) > eventTextLimit {
		ev["text_truncated"] = true
	}
	if r.links > 0 {
		ev["resource_links"] = r.links
	}
	call.Emit("tool_result", ev)
	if res.IsError {
		return nil, &node.Error{
			Code: "mcp_error", Category: mcpclient.CategoryToolError,
			Message: fmt.Sprintf("tool %q of MCP server %q failed: %s", tool, server, clip(strings.TrimSpace(r.text), 500)),
			Details: map[string]any{"text": r.text, "server": server, "tool": tool},
		}
	}
	if app, ok := args["app_name"].(string); ok && tool == focusWindow && app != "" {
		cache.focus(server, app)
	}
	return output(res, r.text, call.ArtifactDir, tool)
}

// warner returns a func that records a warning event.
func warner(call *node.Call) func(string) {
	return func(msg string) { call.Emit("warning", map[string]any{"message": call.Redact(msg)}) }
}

// progressEvents returns a callback that records each progress
// notification of a call as a tool_progress event.
func progressEvents(call *node.Call, server, tool string) func(mcpclient.Progress) {
	return func(p mcpclient.Progress) {
		ev := map[string]any{"server": server, "tool": tool, "progress": p.Progress}
		if p.Total > 0 {
			ev["total"] = p.Total
		}
		if p.Message != "" {
			ev["message"] = clip(call.Redact(p.Message), eventTextLimit)
		}
		call.Emit("tool_progress", ev)
	}
}
