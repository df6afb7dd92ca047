package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strings"
	"sync"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// A workflow tool is a child workflow an agent may call as a tool: written
// in tools as {workflow: path, name, description}. Its input schema is the
// child's inputs; each call is a child run of the agent's run.
type workflowTool struct {
	path, name, description string
}

// toolName is what model APIs accept as a tool name, compiled on first
// use (by a workflow with an agent).
var toolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// workflowToolsOf reads the workflow entries of tools (maps; strings are
// MCP patterns). Check has refused malformed ones; a templated entry that
// renders to one fails the node.
func workflowToolsOf(c *node.Call) ([]workflowTool, error) {
	var out []workflowTool
	for i, e := range toolEntries(c.Params["tools"]) {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		if errs := checkWorkflowTool(i, m); len(errs) > 0 {
			return nil, node.Failf(node.CategoryValidation, "param_type", "node %s: %s", c.NodeID, errs[0].Message)
		}
		wt := workflowTool{path: m["workflow"].(string), name: m["name"].(string)}
		wt.description, _ = m["description"].(string)
		out = append(out, wt)
	}
	return out, nil
}

// toolEntries is the value of tools as a list: one pattern may be written
// alone.
func toolEntries(v any) []any {
	switch x := v.(type) {
	case []any:
		return x
	case string:
		return []any{x}
	}
	return nil
}

// mcpPatterns are the MCP tools of tools: its strings.
func mcpPatterns(c *node.Call) []string {
	var out []string
	for _, e := range toolEntries(c.Params["tools"]) {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// checkTools checks the entries of an agent's tools as written: strings
// (MCP patterns) or workflow tools.
func checkTools(p map[string]any) []node.ParamError {
	v, ok := p["tools"]
	if !ok || v == nil {
		return nil
	}
	switch v.(type) {
	case []any, string:
	default:
		return []node.ParamError{{Param: "tools", Message: "tools is a list of server.tool patterns and {workflow: file, name, description} tools"}}
	}
	list := toolEntries(v)
	var errs []node.ParamError
	names := map[string]bool{}
	for i, e := range list {
		switch x := e.(type) {
		case string:
		case map[string]any:
			errs = append(errs, checkWorkflowTool(i, x)...)
			if n, ok := x["name"].(string); ok {
				if names[n] {
					errs = append(errs, node.ParamError{Param: fmt.Sprintf("tools[%d].name", i), Message: fmt.Sprintf("two workflow tools are named %q; give each its own name", n)})
				}
				names[n] = true
			}
		default:
			errs = append(errs, node.ParamError{Param: fmt.Sprintf("tools[%d]", i), Message: "a tool is a server.tool pattern or {workflow: file, name, description}"})
		}
	}
	return errs
}

func checkWorkflowTool(i int, m map[string]any) []node.ParamError {
	at := func(k string) string { return fmt.Sprintf("tools[%d].%s", i, k) }
	var errs []node.ParamError
	for k := range m {
		if k != "workflow" && k != "name" && k != "description" {
			errs = append(errs, node.ParamError{Param: at(k), Message: fmt.Sprintf("a workflow tool has no field %q (fields: workflow, name, description)", k)})
		}
	}
	if f, ok := m["workflow"].(string); !ok || f == "" {
		errs = append(errs, node.ParamError{Param: at("workflow"), Message: "a workflow tool needs workflow: the child workflow's file, relative to this one"})
	}
	if n, ok := m["name"].(string); !ok || !toolName().MatchString(n) {
		errs = append(errs, node.ParamError{Param: at("name"), Message: "a workflow tool needs name: 1 to 64 letters, digits, _ or - (what the model calls it)"})
	}
	if d, ok := m["description"]; ok {
		if _, ok := d.(string); !ok {
			errs = append(errs, node.ParamError{Param: at("description"), Message: "description must be a string"})
		}
	}
	return errs
}

// offerWorkflows turns the workflow tools into the tools offered to the
// model, their schema the child's inputs, their description the one
// written (else the child workflow's own).
func offerWorkflows(c *node.Call, wts []workflowTool) ([]llm.Tool, node.NamedChildren, error) {
	if len(wts) == 0 {
		return nil, nil, nil
	}
	ch, err := node.ChildrenService.Get(c)
	if err != nil {
		return nil, nil, err
	}
	named, ok := ch.(node.NamedChildren)
	if !ok {
		return nil, nil, node.Failf(node.CategoryInternal, "service_unavailable", "node %s has workflow tools, but this host cannot run them", c.NodeID)
	}
	tools := make([]llm.Tool, 0, len(wts))
	for _, wt := range wts {
		schema, desc, err := named.InputSchema(wt.path)
		if err != nil {
			e := node.Failf(node.CategoryValidation, "subworkflow_invalid", "node %s: tool %s: %v", c.NodeID, wt.name, err)
			e.Permanent = true
			return nil, nil, e
		}
		if wt.description != "" {
			desc = wt.description
		}
		if desc == "" {
			desc = "Runs the workflow " + wt.path + "."
		}
		tools = append(tools, llm.Tool{Name: wt.name, Description: desc, InputSchema: schema})
	}
	return tools, named, nil
}

// callWorkflow runs one call of a workflow tool as a child run named
// <tool><call> and returns the tool result: the child's outputs as JSON,
// or an error the model reads. A spent budget is the node's error, not the
// model's to handle.
func callWorkflow(ctx context.Context, c *node.Call, named node.NamedChildren, wt workflowTool, args map[string]any, call int, spent *childSpend) (string, bool, error) {
	out, err := named.RunNamedChild(ctx, fmt.Sprintf("%s%d", wt.name, call), wt.path, args)
	if err != nil {
		if e := node.AsError(err); e.Details != nil {
			spent.add(e.Details["token_usage"])
		}
		var e *node.Error
		if errors.As(err, &e) && e.Category == categoryBudget {
			return "", true, err
		}
		if ctx.Err() != nil {
			return "", true, err
		}
		return "error: " + c.Redact(err.Error()), true, nil
	}
	spent.add(out["_token_usage"])
	shown := make(map[string]any, len(out))
	for k, v := range out {
		if !strings.HasPrefix(k, "_") { // directives are not the model's
			shown[k] = v
		}
	}
	b, err := json.Marshal(shown)
	if err != nil {
		return "error: the workflow's outputs are not JSON: " + err.Error(), true, nil
	}
	return c.Redact(string(b)), false, nil
}

// childSpend is what an agent's workflow tools spent when their host
// reports it with each result (a queued run's worker: the parent run
// counts a child's spend through the step's _token_usage). The local
// engine counts a child's spend in the run itself and reports none.
type childSpend struct {
	tokens int
	cost   float64
}

func (s *childSpend) add(usage any) {
	u, _ := usage.(map[string]any)
	switch n := u["total_tokens"].(type) {
	case int:
		s.tokens += n
	case int64:
		s.tokens += int(n)
	case float64:
		s.tokens += int(n)
	}
	if f, ok := u["cost_usd"].(float64); ok {
		s.cost += f
	}
}

// onto adds what the children spent to a _token_usage directive.
func (s *childSpend) onto(d map[string]any) map[string]any {
	if s.tokens == 0 && s.cost == 0 {
		return d
	}
	out := maps.Clone(d)
	t, _ := d["total_tokens"].(int)
	c, _ := d["cost_usd"].(float64)
	out["total_tokens"], out["cost_usd"] = t+s.tokens, c+s.cost
	return out
}
