package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	mcpclient "github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
)

// Picker asks a model which item of a list matches a description. The AI
// kinds' models implement it.
type Picker interface {
	// PickItem returns the matching item's number, counting from 1 (0:
	// none matches), the model's reason, the model that answered and the
	// _token_usage directive of the call (also with an error, when the
	// model answered and was billed). An empty model is the default one.
	PickItem(ctx context.Context, model, description string, items []any) (int, string, string, map[string]any, error)
	// Priced reports the llm: entry and model a name resolves to, and
	// whether the model's price is known.
	Priced(name string) (entry, model string, known bool)
}

// PickerService is the key of the run's Picker in node.Call.Services.
var PickerService = node.NewService[Picker]("a model to resolve mcp arguments")

// Resolutions cache what resolve: arguments resolved to, for one run, by
// node and description. Its methods are safe for concurrent use.
type Resolutions struct {
	mu sync.Mutex
	m  map[resolutionKey]resolution
}

// resolution is what one resolve: argument resolved to, and its resolved
// event.
type resolution struct {
	value any
	event map[string]any
}

type resolutionKey struct{ node, description string }

// ResolutionsService is the key of the run's *Resolutions.
var ResolutionsService = node.NewService[*Resolutions]("the run's resolved mcp arguments")

// NewResolutions returns an empty cache.
func NewResolutions() *Resolutions { return &Resolutions{m: map[resolutionKey]resolution{}} }

func (r *Resolutions) get(nodeID, description string) (resolution, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[resolutionKey{nodeID, description}]
	return v, ok
}

func (r *Resolutions) put(nodeID, description string, v resolution) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[resolutionKey{nodeID, description}] = v
}

// evict forgets what the node resolved, before a retry.
func (r *Resolutions) evict(nodeID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := range r.m {
		if k.node == nodeID {
			delete(r.m, k)
		}
	}
}

// resolveSpec is an argument written as {resolve, from, field, model}.
type resolveSpec struct {
	arg         string
	description string
	server      string
	tool        string
	args        map[string]any
	field       string
	model       string
}

// resolveKeys are the keys of a resolve: argument.
var resolveKeys = []string{"resolve", "from", "field", "model"}

// resolveSpecs finds the arguments to resolve: top-level values that are
// maps with a resolve key. server is the node's.
func resolveSpecs(args map[string]any, server string) ([]resolveSpec, error) {
	var out []resolveSpec
	for _, name := range slices.Sorted(maps.Keys(args)) {
		m, ok := args[name].(map[string]any)
		if !ok {
			continue
		}
		if _, ok := m["resolve"]; !ok {
			continue
		}
		bad := func(format string, a ...any) error {
			return &node.Error{Code: "invalid_params", Category: node.CategoryValidation, Permanent: true,
				Message: fmt.Sprintf("argument %s: %s; write {resolve: \"the invoice window\", from: {tool: list_windows, args: {…}, server: …}, field: id}",
					name, fmt.Sprintf(format, a...))}
		}
		for k := range m {
			if !slices.Contains(resolveKeys, k) {
				return nil, bad("%q is not a key of resolve (it takes %s)", k, strings.Join(resolveKeys, ", "))
			}
		}
		s := resolveSpec{arg: name, server: server}
		if s.description, ok = m["resolve"].(string); !ok || strings.TrimSpace(s.description) == "" {
			return nil, bad("resolve must be a description of the item to pick")
		}
		from, ok := m["from"].(map[string]any)
		if !ok {
			return nil, bad("from must name the tool that lists the items")
		}
		for k := range from {
			if k != "tool" && k != "args" && k != "server" {
				return nil, bad("%q is not a key of from (it takes tool, args, server)", k)
			}
		}
		if s.tool, ok = from["tool"].(string); !ok || s.tool == "" {
			return nil, bad("from.tool must name the tool that lists the items")
		}
		if v, ok := from["server"]; ok {
			if s.server, ok = v.(string); !ok || s.server == "" {
				return nil, bad("from.server must name a server of mcp_servers")
			}
		}
		switch a := from["args"].(type) {
		case nil:
		case map[string]any:
			s.args = a
		default:
			return nil, bad("from.args must be a map")
		}
		for k, p := range map[string]*string{"field": &s.field, "model": &s.model} {
			if v, ok := m[k]; ok {
				if *p, ok = v.(string); !ok {
					return nil, bad("%s must be a string", k)
				}
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// resolver resolves a call's resolve: arguments.
type resolver struct {
	call  *node.Call
	pool  *mcpclient.Pool
	cache *Resolutions
	spent *usage
}

// usage adds up the _token_usage directives of the picks.
type usage struct {
	input, output, total int
	cost                 float64
	priced               bool
	any                  bool
}

func (u *usage) add(d map[string]any) {
	if d == nil {
		return
	}
	if !u.any {
		u.any, u.priced = true, true
	}
	num := func(k string) float64 {
		switch v := d[k].(type) {
		case int:
			return float64(v)
		case float64:
			return v
		}
		return 0
	}
	u.input += int(num("input_tokens"))
	u.output += int(num("output_tokens"))
	u.total += int(num("total_tokens"))
	u.cost += num("cost_usd")
	if p, ok := d["priced"].(bool); ok && !p {
		u.priced = false
	}
}

func (u *usage) directive() map[string]any {
	return map[string]any{"input_tokens": u.input, "output_tokens": u.output, "total_tokens": u.total, "cost_usd": u.cost, "priced": u.priced}
}

// withUsage adds what the picks spent to a failed call's error, so the
// run is charged for it.
func withUsage(err error, spent *usage) error {
	if err == nil || !spent.any {
		return err
	}
	e := node.AsError(err)
	cp := *e
	cp.Details = make(map[string]any, len(e.Details)+1)
	maps.Copy(cp.Details, e.Details)
	cp.Details["token_usage"] = spent.directive()
	return &cp
}

// resolve replaces each resolve: argument of args with the item the model
// picked from its listing, or what the run's cache holds for it.
func (r *resolver) resolve(ctx context.Context, args map[string]any, specs []resolveSpec) error {
	for _, s := range specs {
		if v, ok := r.cache.get(r.call.NodeID, s.description); ok {
			ev := maps.Clone(v.event)
			ev["argument"], ev["cached"] = s.arg, true
			r.call.Emit("resolved", ev)
			args[s.arg] = v.value
			continue
		}
		v, err := r.pick(ctx, s)
		if err != nil {
			return err
		}
		r.cache.put(r.call.NodeID, s.description, v)
		args[s.arg] = v.value
	}
	return nil
}

// pick lists the items and asks the model which one matches.
func (r *resolver) pick(ctx context.Context, s resolveSpec) (resolution, error) {
	var none resolution
	c := r.call
	t, err := r.pool.Tool(ctx, s.server, s.tool)
	if err != nil {
		return none, err
	}
	if pins, ok := mcpclient.LockService.Lookup(c.Services); ok {
		if err := pins.Check(ctx, r.pool, s.server, []*mcpclient.Tool{t}, warner(c)); err != nil {
			return none, err
		}
	}
	args := s.args
	if args == nil {
		args = map[string]any{}
	}
	if err := t.CheckArguments(args); err != nil {
		return none, err
	}
	c.Emit("tool_call", map[string]any{"server": s.server, "tool": s.tool, "arguments": node.RedactValue(args, c.Redact), "resolving": s.arg})
	start := c.Now()
	res, err := r.pool.CallTool(ctx, s.server, s.tool, args)
	ms := c.Now().Sub(start).Milliseconds()
	if err != nil {
		c.Emit("tool_result", map[string]any{"server": s.server, "tool": s.tool, "duration_ms": ms, "is_error": true, "images": 0, "text": "",
			"error": c.Redact(node.AsError(err).Message), "resolving": s.arg})
		return none, err
	}
	sum := readResult(res)
	c.Emit("tool_result", map[string]any{"server": s.server, "tool": s.tool, "duration_ms": ms, "is_error": res.IsError,
		"images": sum.images, "text": clip(c.Redact(sum.text), eventTextLimit), "resolving": s.arg})
	if res.IsError {
		return none, &node.Error{Code: "mcp_error", Category: mcpclient.CategoryToolError,
			Message: fmt.Sprintf("argument %s: listing tool %q of MCP server %q failed: %s", s.arg, s.tool, s.server, clip(strings.TrimSpace(sum.text), 500)),
			Details: map[string]any{"text": sum.text, "server": s.server, "tool": s.tool}}
	}
	out, err := output(res, sum.text, "", s.tool)
	if err != nil {
		return none, err
	}
	items := listItems(out)
	if len(items) == 0 {
		return none, &node.Error{Code: "resolve_no_items", Category: node.CategoryExecution,
			Message: fmt.Sprintf("argument %s: tool %q of MCP server %q listed nothing to pick %q from", s.arg, s.tool, s.server, s.description)}
	}

	picker, err := PickerService.Get(c)
	if err != nil {
		return none, err
	}
	name := s.model
	if name == "" {
		name = "default"
	}
	entry, priceless, known := picker.Priced(name)
	if b, ok := node.BudgetService.Lookup(c.Services); ok {
		if err := b.CheckExtra(r.spent.total, r.spent.cost); err != nil {
			return none, err
		}
		if !known && b.CostLimited() {
			return none, &node.Error{Code: "model_unpriced", Category: "budget_exceeded", Permanent: true,
				Message: fmt.Sprintf("argument %s: model %s has no known price, so limits.max_cost_usd cannot count what resolving costs; "+
					"set one in the workflow: llm: {%s: {…, price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}}", s.arg, priceless, entry)}
		}
	}
	n, reason, model, used, err := picker.PickItem(ctx, s.model, s.description, items)
	r.spent.add(used)
	if p, ok := used["priced"].(bool); ok && !p {
		c.Emit("warning", map[string]any{"model": model, "unpriced": true, "message": fmt.Sprintf(
			"model %s has no known price, so resolving argument %s counts as $0; set one in the workflow: llm: {%s: {…, price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}}", model, s.arg, entry)})
	}
	if err != nil {
		return none, err
	}
	ev := map[string]any{"argument": s.arg, "description": s.description, "server": s.server, "tool": s.tool,
		"items": len(items), "index": n, "reason": c.Redact(reason), "model": model}
	if n < 1 || n > len(items) {
		c.Emit("resolved", ev)
		return none, &node.Error{Code: "resolve_no_match", Category: node.CategoryExecution,
			Message: fmt.Sprintf("argument %s: no item that tool %q listed matches %q (of %d; the model said: %s)", s.arg, s.tool, s.description, len(items), clip(reason, 300)),
			Details: map[string]any{"argument": s.arg, "reason": reason, "items": len(items)}}
	}
	item := items[n-1]
	value := item
	if s.field != "" {
		m, ok := item.(map[string]any)
		if !ok || m[s.field] == nil {
			return none, &node.Error{Code: "resolve_no_field", Category: node.CategoryExecution,
				Message: fmt.Sprintf("argument %s: the item picked for %q has no field %q: %s", s.arg, s.description, s.field, clip(jsonText(item), 300))}
		}
		value = m[s.field]
	}
	ev["item"] = node.RedactValue(item, c.Redact)
	ev["value"] = node.RedactValue(value, c.Redact)
	c.Emit("resolved", ev)
	return resolution{value: value, event: ev}, nil
}

// listItems finds the items of a listing tool's output: its items (a JSON
// array), the one list among its keys, or its text's non-empty lines.
func listItems(out map[string]any) []any {
	if items, ok := out["items"].([]any); ok {
		return items
	}
	var lists [][]any
	for _, k := range slices.Sorted(maps.Keys(out)) {
		if l, ok := out[k].([]any); ok && !strings.HasPrefix(k, "_") {
			lists = append(lists, l)
		}
	}
	if len(lists) == 1 {
		return lists[0]
	}
	if text, ok := out["text"].(string); ok && len(out) == 1 {
		var items []any
		for _, line := range strings.Split(text, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				items = append(items, line)
			}
		}
		return items
	}
	return nil
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
