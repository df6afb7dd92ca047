package repair

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/skeinhq/skein/workflow"
)

// Operations of a Change.
const (
	OpChanged = "changed"
	OpAdded   = "added"
	OpRemoved = "removed"
)

// Change is one difference between two workflows: a field of a node, a
// node or an edge added or removed, or a field of the workflow itself
// (Node and Edge empty, Field such as outputs.result).
type Change struct {
	Node  string `json:"node,omitempty"`
	Edge  string `json:"edge,omitempty"`
	Field string `json:"field,omitempty"`
	Op    string `json:"op"`
	From  any    `json:"from,omitempty"`
	To    any    `json:"to,omitempty"`
}

// String renders the change as one line: `node fetch: url: "a" → "b"`,
// `node notify: added (http)`, `edge a → b: removed`.
func (c Change) String() string {
	var b strings.Builder
	switch {
	case c.Edge != "":
		fmt.Fprintf(&b, "edge %s: %s", c.Edge, c.Op)
		return b.String()
	case c.Node != "" && c.Field == "":
		fmt.Fprintf(&b, "node %s: %s", c.Node, c.Op)
		if t, ok := c.To.(string); ok && c.Op == OpAdded {
			fmt.Fprintf(&b, " (%s)", t)
		} else if t, ok := c.From.(string); ok && c.Op == OpRemoved {
			fmt.Fprintf(&b, " (%s)", t)
		}
		return b.String()
	case c.Node != "":
		fmt.Fprintf(&b, "node %s: %s: ", c.Node, c.Field)
	default:
		fmt.Fprintf(&b, "%s: ", c.Field)
	}
	switch c.Op {
	case OpAdded:
		b.WriteString("added " + show(c.To))
	case OpRemoved:
		b.WriteString("removed (was " + show(c.From) + ")")
	default:
		b.WriteString(show(c.From) + " → " + show(c.To))
	}
	return b.String()
}

// maxShown bounds a value in a change line.
const maxShown = 120

// show renders a value as JSON, clipped.
func show(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	s := strings.TrimSpace(buf.String())
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !isRuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// Lines renders changes one per line.
func Lines(changes []Change) []string {
	out := make([]string, len(changes))
	for i, c := range changes {
		out[i] = c.String()
	}
	return out
}

// Diff lists what changed from old to new: per node, each field changed,
// added or removed (dotted paths into parameters: query.key, command[2]);
// nodes and edges added or removed; then the workflow's own sections
// (inputs, outputs, llm, …). Nodes are matched by id. old may be nil (a
// file that did not parse): every node is then added.
func Diff(old, new *workflow.Workflow) []Change {
	var out []Change
	oldNodes := map[string]*workflow.Node{}
	if old != nil {
		for _, n := range old.Nodes {
			oldNodes[n.ID] = n
		}
	}
	newIDs := map[string]bool{}
	for _, n := range new.Nodes {
		newIDs[n.ID] = true
		o, ok := oldNodes[n.ID]
		if !ok {
			out = append(out, Change{Node: n.ID, Op: OpAdded, To: n.Type})
			continue
		}
		a, b := plain(nodeMap(o)), plain(nodeMap(n))
		for _, c := range diffValues("", a, b) {
			c.Node = n.ID
			out = append(out, c)
		}
	}
	if old != nil {
		for _, n := range old.Nodes {
			if !newIDs[n.ID] {
				out = append(out, Change{Node: n.ID, Op: OpRemoved, From: n.Type})
			}
		}
	}
	oldEdges, newEdges := edgeSet(old), edgeSet(new)
	for _, e := range edgeKeys(new) {
		if !oldEdges[e] {
			out = append(out, Change{Edge: e, Op: OpAdded})
		}
	}
	for _, e := range edgeKeys(old) {
		if !newEdges[e] {
			out = append(out, Change{Edge: e, Op: OpRemoved})
		}
	}
	var before any = map[string]any{}
	if old != nil {
		before = plain(sections(old))
	}
	out = append(out, diffValues("", before, plain(sections(new)))...)
	return out
}

func nodeMap(n *workflow.Node) map[string]any {
	m := n.Map()
	delete(m, "id")
	return m
}

func edgeName(e *workflow.Edge) string {
	s := e.From + " → " + e.To
	if e.On != "" {
		s += " (on " + e.On + ")"
	}
	return s
}

func edgeKeys(w *workflow.Workflow) []string {
	if w == nil {
		return nil
	}
	var out []string
	for _, e := range w.Edges {
		if !e.Implicit {
			out = append(out, edgeName(e))
		}
	}
	return out
}

func edgeSet(w *workflow.Workflow) map[string]bool {
	set := map[string]bool{}
	for _, k := range edgeKeys(w) {
		set[k] = true
	}
	return set
}

// sections returns the workflow's fields other than nodes and edges as
// plain values, keyed as in a file.
func sections(w *workflow.Workflow) map[string]any {
	m := map[string]any{"name": w.Name, "version": w.Version}
	if w.Description != "" {
		m["description"] = w.Description
	}
	if len(w.Inputs) > 0 {
		in := map[string]any{}
		for _, i := range w.Inputs {
			in[i.Name] = map[string]any{"type": i.Type, "required": i.Required, "default": i.Default,
				"description": i.Description, "enum": i.Enum}
		}
		m["inputs"] = in
	}
	if len(w.Secrets) > 0 {
		m["secrets"] = w.Secrets
	}
	if len(w.Files) > 0 {
		f := make([]string, len(w.Files))
		for i, x := range w.Files {
			f[i] = x.Path
		}
		m["files"] = f
	}
	if w.Defaults != (workflow.Defaults{}) {
		d := w.Defaults
		m["defaults"] = map[string]any{"retries": d.Retries, "retry_backoff": d.RetryBackoff.String(),
			"timeout": d.Timeout.String(), "max_visits": d.MaxVisits, "on_error": d.OnError}
	}
	if len(w.MCPServers) > 0 {
		s := map[string]any{}
		for _, x := range w.MCPServers {
			s[x.Name] = map[string]any{"command": x.Command, "args": x.Args, "env": x.Env, "cwd": x.Cwd,
				"url": x.URL, "headers": x.Headers}
		}
		m["mcp_servers"] = s
	}
	if len(w.LLM) > 0 {
		l := map[string]any{}
		for _, x := range w.LLM {
			l[x.Name] = map[string]any{"provider": x.Provider, "model": x.Model, "base_url": x.BaseURL,
				"api_key": x.APIKey, "headers": x.Headers, "temperature": x.Temperature, "max_tokens": x.MaxTokens, "stream": x.Stream}
		}
		m["llm"] = l
	}
	if w.Limits != (workflow.Limits{}) {
		m["limits"] = map[string]any{"max_tokens": w.Limits.MaxTokens, "max_cost_usd": w.Limits.MaxCostUSD}
	}
	if w.Evidence != nil {
		m["evidence"] = map[string]any{"server": w.Evidence.Server, "tool": w.Evidence.Tool, "arguments": w.Evidence.Arguments}
	}
	if len(w.Outputs) > 0 {
		o := map[string]any{}
		for _, x := range w.Outputs {
			o[x.Name] = x.Value
		}
		m["outputs"] = o
	}
	return m
}

// plain round-trips v through JSON, so 3 and 3.0, []string and []any
// compare equal.
func plain(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		return fmt.Sprint(v)
	}
	return out
}

// diffValues compares two plain values under path.
func diffValues(path string, a, b any) []Change {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		keys := map[string]bool{}
		for k := range am {
			keys[k] = true
		}
		for k := range bm {
			keys[k] = true
		}
		sorted := make([]string, 0, len(keys))
		for k := range keys {
			sorted = append(sorted, k)
		}
		sort.Strings(sorted)
		var out []Change
		for _, k := range sorted {
			p := k
			if path != "" {
				p = path + "." + k
			}
			// A null is the same as leaving the field out.
			av, ina := am[k]
			bv, inb := bm[k]
			ina, inb = ina && av != nil, inb && bv != nil
			switch {
			case !ina && empty(bv), !inb && empty(av):
			case !ina:
				out = append(out, Change{Field: p, Op: OpAdded, To: bv})
			case !inb:
				out = append(out, Change{Field: p, Op: OpRemoved, From: av})
			default:
				out = append(out, diffValues(p, av, bv)...)
			}
		}
		return out
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		var out []Change
		for i := range al {
			out = append(out, diffValues(fmt.Sprintf("%s[%d]", path, i), al[i], bl[i])...)
		}
		return out
	}
	if reflect.DeepEqual(a, b) {
		return nil
	}
	return []Change{{Field: path, Op: OpChanged, From: a, To: b}}
}

// empty reports a value that is the same as leaving the field out.
func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case bool:
		return !x
	case float64:
		return x == 0
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}
