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

// Tools that resolution knows by name, as the desktop MCP servers that
// click by name have them.
const (
	// findText searches the screen for a text ({text, app_name}): it
	// answers the matching elements, or none and the names of the elements
	// it could see (available_elements).
	findText = "find_text"
	// listApps lists the running apps; an app's name is resolved against
	// it.
	listApps = "list_apps"
	// focusWindow brings an app ({app_name}) to the front; later find_text
	// resolutions on its server are scoped to that app.
	focusWindow = "focus_window"
)

// Resolutions are a run's caches of what resolve: arguments resolved to
// when a model had to decide, and the app each MCP server last focused.
// Keys hold the server, the listing tool, the target as written and the
// app it was resolved in: find_text names by (target, app), list_apps
// names by app name, other listings by (tool arguments, target, focused
// app). Its methods are safe for concurrent use.
type Resolutions struct {
	mu      sync.Mutex
	m       map[cacheKey]cached
	focused map[string]string // server → app
}

// cacheKey is one cached resolution.
type cacheKey struct{ server, tool, args, target, app string }

// cached is what a model decided a target is: for find_text the element's
// name (and role, when it chose among several matches) that the tool
// finds it by; for a listing, the item.
type cached struct {
	name, role string
	item       any
}

// ResolutionsService is the key of the run's *Resolutions.
var ResolutionsService = node.NewService[*Resolutions]("the run's resolved mcp arguments")

// NewResolutions returns empty caches.
func NewResolutions() *Resolutions {
	return &Resolutions{m: map[cacheKey]cached{}, focused: map[string]string{}}
}

func (r *Resolutions) get(k cacheKey) (cached, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, ok := r.m[k]
	return v, ok
}

func (r *Resolutions) put(k cacheKey, v cached) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[k] = v
}

// evict forgets one resolution.
func (r *Resolutions) evict(k cacheKey) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, k)
}

// focus records the app a server focused.
func (r *Resolutions) focus(server, app string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.focused[server] = app
}

// unfocus forgets the app a server focused.
func (r *Resolutions) unfocus(server string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.focused, server)
}

// focusedApp is the app the server last focused, or "".
func (r *Resolutions) focusedApp(server string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.focused[server]
}

// scope is the app a spec resolves in: none for list_apps (app names
// are cached by name), else the app_name its find_text arguments give, else
// the app its server focused last.
func (r *Resolutions) scope(s resolveSpec) string {
	if s.tool == listApps {
		return ""
	}
	if app, ok := s.args["app_name"].(string); ok && s.tool == findText {
		return app
	}
	return r.focusedApp(s.server)
}

// key is the cache entry of a spec resolved in app.
func (s resolveSpec) key(app string) cacheKey {
	k := cacheKey{server: s.server, tool: s.tool, target: s.description, app: app}
	if s.tool != findText && s.tool != listApps {
		k.args = jsonText(s.args)
	}
	return k
}

// evictFor forgets, before a retry, what the node's kind of call keeps:
// the resolutions of its resolve: arguments in the app they would use now,
// and the focused app when the node focuses one.
func (r *Resolutions) evictFor(server, tool string, specs []resolveSpec) {
	for _, s := range specs {
		r.evict(s.key(r.scope(s)))
	}
	if tool == focusWindow {
		r.unfocus(server)
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

// Sources of a resolution, in its resolved event.
const (
	sourceTool  = "tool"  // the tool found one match
	sourceCache = "cache" // a model's earlier decision, kept for the run
	sourceModel = "model" // a model picked among the candidates
)

// resolve replaces each resolve: argument of args with what it resolves
// to. The tool comes first: a direct match is used as it is; a model is
// asked only when the tool gives no direct match but candidates, and what
// it decides is kept in the run's caches.
func (r *resolver) resolve(ctx context.Context, args map[string]any, specs []resolveSpec) error {
	for _, s := range specs {
		var (
			v   any
			err error
		)
		if s.tool == findText {
			v, err = r.findElement(ctx, s)
		} else {
			v, err = r.fromListing(ctx, s)
		}
		if err != nil {
			return err
		}
		args[s.arg] = v
	}
	return nil
}

// fromListing resolves s against the items its listing tool gives: the
// one item whose name is the target, else the item a model picks.
func (r *resolver) fromListing(ctx context.Context, s resolveSpec) (any, error) {
	app := r.cache.scope(s)
	key := s.key(app)
	ev := r.event(s, app)
	if c, ok := r.cache.get(key); ok {
		ev["source"] = sourceCache
		return r.done(s, ev, c.item)
	}
	out, err := r.list(ctx, s, s.args)
	if err != nil {
		return nil, err
	}
	items := listItems(out)
	if len(items) == 0 {
		return nil, &node.Error{Code: "resolve_no_items", Category: node.CategoryExecution,
			Message: fmt.Sprintf("argument %s: tool %q of MCP server %q listed nothing to pick %q from", s.arg, s.tool, s.server, s.description)}
	}
	ev["items"] = len(items)
	if i := directMatch(items, s); i >= 0 {
		ev["source"] = sourceTool
		return r.done(s, ev, items[i])
	}
	n, err := r.ask(ctx, s, items, ev)
	if err != nil {
		return nil, err
	}
	r.cache.put(key, cached{item: items[n-1]})
	return r.done(s, ev, items[n-1])
}

// findElement resolves s with find_text: the element it finds by the
// target's name (or by the name a model gave the target earlier in this
// app); among several, the one a model picks; with none, the tool's
// available elements are the candidates a model names the target from.
func (r *resolver) findElement(ctx context.Context, s resolveSpec) (any, error) {
	app := r.cache.scope(s)
	key := s.key(app)
	ev := r.event(s, app)
	name, c, fromCache := s.description, cached{}, false
	if c, fromCache = r.cache.get(key); fromCache {
		name = c.name
	}
	matches, candidates, err := r.find(ctx, s, name, app)
	if err != nil {
		return nil, err
	}
	if fromCache && len(matches) == 0 {
		// The element the cache names is gone: resolve afresh.
		r.cache.evict(key)
		name, c, fromCache = s.description, cached{}, false
		if matches, candidates, err = r.find(ctx, s, name, app); err != nil {
			return nil, err
		}
	}
	ev["source"] = sourceTool
	if fromCache {
		ev["source"] = sourceCache
	}
	if len(matches) == 0 {
		if len(candidates) == 0 {
			return nil, &node.Error{Code: "resolve_no_items", Category: node.CategoryExecution,
				Message: fmt.Sprintf("argument %s: tool %q of MCP server %q found no element %q%s and listed none to pick from", s.arg, s.tool, s.server, s.description, inApp(app))}
		}
		ev["items"] = len(candidates)
		n, err := r.ask(ctx, s, candidates, ev)
		if err != nil {
			return nil, err
		}
		name = label(candidates[n-1], "")
		r.cache.put(key, cached{name: name})
		if matches, _, err = r.find(ctx, s, name, app); err != nil {
			return nil, err
		}
		if len(matches) == 0 {
			return nil, &node.Error{Code: "resolve_no_match", Category: node.CategoryExecution,
				Message: fmt.Sprintf("argument %s: tool %q of MCP server %q found no element %q, the name the model gave %q%s", s.arg, s.tool, s.server, name, s.description, inApp(app))}
		}
	}
	ev["name"] = name
	if len(matches) == 1 {
		return r.done(s, ev, matches[0])
	}
	if fromCache && c.role != "" {
		for _, m := range matches {
			if label(m, "") == c.name && role(m) == c.role {
				return r.done(s, ev, m)
			}
		}
	}
	ev["items"] = len(matches)
	n, err := r.ask(ctx, s, matches, ev)
	if err != nil {
		return nil, err
	}
	picked := matches[n-1]
	r.cache.put(key, cached{name: label(picked, ""), role: role(picked)})
	return r.done(s, ev, picked)
}

// event starts the resolved event of s.
func (r *resolver) event(s resolveSpec, app string) map[string]any {
	ev := map[string]any{"argument": s.arg, "description": s.description, "server": s.server, "tool": s.tool}
	if app != "" {
		ev["app"] = app
	}
	return ev
}

// done emits the resolved event of the item s resolved to, and returns
// the argument's value: the item, or its field.
func (r *resolver) done(s resolveSpec, ev map[string]any, item any) (any, error) {
	c := r.call
	value := item
	if s.field != "" {
		m, ok := item.(map[string]any)
		if !ok || m[s.field] == nil {
			c.Emit("resolved", ev)
			return nil, &node.Error{Code: "resolve_no_field", Category: node.CategoryExecution,
				Message: fmt.Sprintf("argument %s: the item picked for %q has no field %q: %s", s.arg, s.description, s.field, clip(jsonText(item), 300))}
		}
		value = m[s.field]
	}
	ev["item"] = node.RedactValue(item, c.Redact)
	ev["value"] = node.RedactValue(value, c.Redact)
	c.Emit("resolved", ev)
	return value, nil
}

// find calls find_text for name in app: the matches, and the names of
// the elements it could see when there are none.
func (r *resolver) find(ctx context.Context, s resolveSpec, name, app string) (matches, candidates []any, err error) {
	args := maps.Clone(s.args)
	if args == nil {
		args = map[string]any{}
	}
	args["text"] = name
	if _, ok := args["app_name"]; !ok && app != "" {
		args["app_name"] = app
	}
	out, err := r.list(ctx, s, args)
	if err != nil {
		return nil, nil, err
	}
	matches, candidates = foundElements(out)
	return matches, candidates, nil
}

// foundElements reads find_text's answer: a list of matches (its items,
// or a matches key) and available_elements; a text of several JSON values
// (the matches, then an object with available_elements) is read value by
// value.
func foundElements(out map[string]any) (matches, candidates []any) {
	read := func(v any) {
		switch v := v.(type) {
		case []any:
			matches = append(matches, v...)
		case map[string]any:
			if m, ok := v["matches"].([]any); ok {
				matches = append(matches, m...)
			}
			if a, ok := v["available_elements"].([]any); ok {
				candidates = append(candidates, a...)
			}
		}
	}
	if items, ok := out["items"].([]any); ok {
		read(items)
		return matches, candidates
	}
	text, ok := out["text"].(string)
	if !ok || len(out) != 1 {
		read(out)
		return matches, candidates
	}
	dec := json.NewDecoder(strings.NewReader(text))
	for {
		var v any
		if err := dec.Decode(&v); err != nil {
			break
		}
		read(v)
	}
	return matches, candidates
}

// directMatch is the index of the one item whose name is the target
// (ignoring case), or -1 when none or several are.
func directMatch(items []any, s resolveSpec) int {
	found := -1
	for i, it := range items {
		if !strings.EqualFold(strings.TrimSpace(label(it, s.field)), strings.TrimSpace(s.description)) {
			continue
		}
		if found >= 0 {
			return -1
		}
		found = i
	}
	return found
}

// label is an item's name: the item when it is a string, else its field
// (when a string), text, name or title.
func label(item any, field string) string {
	switch v := item.(type) {
	case string:
		return v
	case map[string]any:
		keys := []string{"text", "name", "title"}
		if field != "" {
			keys = append([]string{field}, keys...)
		}
		for _, k := range keys {
			if s, ok := v[k].(string); ok {
				return s
			}
		}
	}
	return ""
}

// role is an element's role, or "".
func role(item any) string {
	m, _ := item.(map[string]any)
	s, _ := m["role"].(string)
	return s
}

func inApp(app string) string {
	if app == "" {
		return ""
	}
	return fmt.Sprintf(" in app %q", app)
}

// list calls the listing tool of s with args and returns its output.
func (r *resolver) list(ctx context.Context, s resolveSpec, args map[string]any) (map[string]any, error) {
	c := r.call
	t, err := r.pool.Tool(ctx, s.server, s.tool)
	if err != nil {
		return nil, err
	}
	if pins, ok := mcpclient.LockService.Lookup(c.Services); ok {
		if err := pins.Check(ctx, r.pool, s.server, []*mcpclient.Tool{t}, warner(c)); err != nil {
			return nil, err
		}
	}
	if args == nil {
		args = map[string]any{}
	}
	if err := t.CheckArguments(args); err != nil {
		return nil, err
	}
	c.Emit("tool_call", map[string]any{"server": s.server, "tool": s.tool, "arguments": node.RedactValue(args, c.Redact), "resolving": s.arg})
	start := c.Now()
	res, err := r.pool.CallTool(ctx, s.server, s.tool, args)
	ms := c.Now().Sub(start).Milliseconds()
	if err != nil {
		c.Emit("tool_result", map[string]any{"server": s.server, "tool": s.tool, "duration_ms": ms, "is_error": true, "images": 0, "text": "",
			"error": c.Redact(node.AsError(err).Message), "resolving": s.arg})
		return nil, err
	}
	sum := readResult(res)
	c.Emit("tool_result", map[string]any{"server": s.server, "tool": s.tool, "duration_ms": ms, "is_error": res.IsError,
		"images": sum.images, "text": clip(c.Redact(sum.text), eventTextLimit), "resolving": s.arg})
	if res.IsError {
		return nil, &node.Error{Code: "mcp_error", Category: mcpclient.CategoryToolError,
			Message: fmt.Sprintf("argument %s: listing tool %q of MCP server %q failed: %s", s.arg, s.tool, s.server, clip(strings.TrimSpace(sum.text), 500)),
			Details: map[string]any{"text": sum.text, "server": s.server, "tool": s.tool}}
	}
	return output(res, sum.text, "", s.tool)
}

// ask has a model pick the item of items that matches s's description,
// and returns its number (from 1). The model's answer goes in ev; no
// matching item emits ev and fails.
func (r *resolver) ask(ctx context.Context, s resolveSpec, items []any, ev map[string]any) (int, error) {
	c := r.call
	picker, err := PickerService.Get(c)
	if err != nil {
		return 0, err
	}
	name := s.model
	if name == "" {
		name = "default"
	}
	entry, priceless, known := picker.Priced(name)
	if b, ok := node.BudgetService.Lookup(c.Services); ok {
		if err := b.CheckExtra(r.spent.total, r.spent.cost); err != nil {
			return 0, err
		}
		if !known && b.CostLimited() {
			return 0, &node.Error{Code: "model_unpriced", Category: "budget_exceeded", Permanent: true,
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
		return 0, err
	}
	ev["source"], ev["index"], ev["reason"], ev["model"] = sourceModel, n, c.Redact(reason), model
	if n < 1 || n > len(items) {
		c.Emit("resolved", ev)
		return 0, &node.Error{Code: "resolve_no_match", Category: node.CategoryExecution,
			Message: fmt.Sprintf("argument %s: no item that tool %q listed matches %q (of %d; the model said: %s)", s.arg, s.tool, s.description, len(items), clip(reason, 300)),
			Details: map[string]any{"argument": s.arg, "reason": reason, "items": len(items)}}
	}
	return n, nil
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
