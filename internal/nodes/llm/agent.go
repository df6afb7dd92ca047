package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
)

// AgentKind is a model that calls MCP tools in a loop until it answers.
type AgentKind struct{}

var _ node.Kind = (*AgentKind)(nil)

// toolSep joins server and tool in the names offered to the model, since
// model APIs allow only [a-zA-Z0-9_-] in tool names.
const toolSep = "__"

type offered struct {
	server, tool string
}

// Run loops: send the conversation; when the reply asks for no tool, it is
// the answer; else run each tool call through MCP (only the tools of
// tools that allowed_tools allows are offered and pinned; a call of any
// other gets an error back, and the run goes on), record
// tool_call/tool_result events, keep images as artifacts and summarise them
// with the vision model when one is configured, and send the results back.
// It stops at max_tool_calls with the last text and `stopped`.
func (AgentKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	ms, err := models(c)
	if err != nil {
		return nil, err
	}
	ch, err := modelChain(c, ms)
	if err != nil {
		return nil, err
	}
	_, modelName := ch.first() // the model that answered last
	var opts llm.Request       // temperature and max_tokens, checked before any server starts
	if err := sampling(c, &opts); err != nil {
		return nil, err
	}
	sch, err := replySchema(c)
	if err != nil {
		return nil, err
	}
	mem, err := memoryOf(c)
	if err != nil {
		return nil, err
	}
	patterns, allowed := mcpPatterns(c), c.Strings("allowed_tools")
	maxCalls := 20
	if n, ok := c.Int("max_tool_calls"); ok {
		maxCalls = n
	}
	imageMode := c.String("images")

	var pool *mcp.Pool
	var tools []llm.Tool
	byName := map[string]offered{}
	if len(patterns) > 0 {
		if pool, err = mcp.Service.Get(c); err != nil {
			return nil, err
		}
		servers := map[string]bool{}
		for _, pat := range patterns {
			srv, _, _ := strings.Cut(pat, ".")
			servers[srv] = true
		}
		// In a fixed order, so the same workflow sends the same request.
		for _, srv := range slices.Sorted(maps.Keys(servers)) {
			list, err := pool.Tools(ctx, srv)
			if err != nil {
				return nil, err
			}
			var used []*mcp.Tool
			for _, t := range list {
				// Only the tools the agent may call are offered: a model
				// never sees the rest.
				if !matchAny(patterns, srv+"."+t.Name) || (len(allowed) > 0 && !matchAny(allowed, srv+"."+t.Name)) {
					continue
				}
				used = append(used, t)
				n := srv + toolSep + t.Name
				byName[n] = offered{srv, t.Name}
				schema := map[string]any{"type": "object"}
				if t.InputSchema != nil {
					if b, err := json.Marshal(t.InputSchema); err == nil {
						_ = json.Unmarshal(b, &schema)
					}
				}
				tools = append(tools, llm.Tool{Name: n, Description: t.Description, InputSchema: schema})
			}
			if pins, ok := mcp.LockService.Lookup(c.Services); ok {
				warn := func(msg string) { c.Emit("warning", map[string]any{"message": c.Redact(msg)}) }
				if err := pins.Check(ctx, pool, srv, used, warn); err != nil {
					return nil, err
				}
			}
		}
	}

	wts, err := workflowToolsOf(c)
	if err != nil {
		return nil, err
	}
	wtools, children, err := offerWorkflows(c, wts)
	if err != nil {
		return nil, err
	}
	workflows := map[string]workflowTool{}
	for i, t := range wtools {
		if _, clash := byName[t.Name]; clash {
			return nil, node.Failf(node.CategoryValidation, "param_type", "node %s: workflow tool %s has the name of an MCP tool; rename it", c.NodeID, t.Name)
		}
		workflows[t.Name] = wts[i]
	}
	tools = append(tools, wtools...)

	ap, err := approvalsOf(c)
	if err != nil {
		return nil, err
	}
	var msgs []llm.Message
	var pending []llm.ToolCall // the calls of the model's turn still to make
	var spent spend
	var childSpent childSpend // what workflow tools spent, when their host reports it
	calls, imagesSaved := 0, 0
	lastText := ""
	if r := ap.resumed; r != nil {
		// On from where the step parked for an approval: the model is not
		// asked again.
		msgs, pending, calls, imagesSaved, lastText = r.Messages, r.Pending, r.Calls, r.Images, r.LastText
	} else {
		if sys := c.String("system"); sys != "" {
			msgs = append(msgs, llm.System(sys))
		}
		past, err := mem.recall(ctx)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, past...)
		conv, err := messageList(c)
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, conv...)
		msgs = append(msgs, llm.User(c.String("prompt")))
	}
	var answer any // the final answer parsed, with a schema
	finish := func(text, stopped string) (map[string]any, error) {
		u := spent.directive()
		shown := u
		u = childSpent.onto(u)
		if bu, bc := ap.before(); bu.TotalTokens > 0 || bc > 0 {
			// The usage shown is the step's; the directive counts only
			// what this part spent (the parts before were counted).
			shown = maps.Clone(shown)
			shown["input_tokens"] = shown["input_tokens"].(int) + bu.InputTokens
			shown["output_tokens"] = shown["output_tokens"].(int) + bu.OutputTokens
			shown["total_tokens"] = shown["total_tokens"].(int) + bu.TotalTokens
			shown["cost_usd"] = shown["cost_usd"].(float64) + bc
		}
		out := map[string]any{"text": text, "tool_calls": calls, "usage": shown, "model": modelName, "stopped": stopped, "_token_usage": u}
		if sch != nil && stopped == "" {
			out["json"] = answer
			if conf, ok := confidenceOf(c.Map("schema"), answer); ok {
				out["_confidence"] = conf
			}
		}
		if stopped == "" {
			if err := mem.remember(ctx, c, c.String("prompt"), text); err != nil {
				return nil, withUsage(err, &spent)
			}
		}
		return out, nil
	}
	round := &toolRound{c: c, ms: ms, pool: pool, children: children, byName: byName, workflows: workflows,
		imageMode: imageMode, maxCalls: maxCalls, ap: ap, finish: finish, childSpent: &childSpent,
		msgs: &msgs, pending: &pending, calls: &calls, images: &imagesSaved, lastText: &lastText, spent: &spent}
	for {
		// The calls of the model's last turn (or those left when the step
		// parked for an approval); then its next turn.
		if out, err := round.run(ctx); out != nil || err != nil {
			return out, err
		}
		req := llm.Request{Messages: msgs, Tools: tools, Temperature: opts.Temperature, MaxTokens: opts.MaxTokens}
		if sch != nil {
			req.JSONSchema = sch.Doc()
		}
		flush := stream(c, &req)
		resp, answered, err := ch.call(ctx, c, &spent, map[string]any{"messages": len(msgs), "tools": len(tools)}, req,
			func(p llm.Provider, req llm.Request) (*llm.Response, error) {
				resp, err := p.Chat(ctx, req)
				if err != nil || sch == nil || len(resp.ToolCalls) > 0 {
					return resp, err
				}
				// The final answer: parsed and validated, with one
				// re-ask, both replies billed.
				var r *llm.Response
				answer, r, err = llm.Reask(ctx, p, req, sch, resp)
				return r, err
			})
		if err != nil {
			return nil, withUsage(err, &spent)
		}
		modelName = answered
		flush()
		lastText = resp.Text
		if len(resp.ToolCalls) == 0 {
			return finish(resp.Text, "")
		}
		msgs = append(msgs, llm.Assistant(resp))
		pending = resp.ToolCalls
	}
}

// resourceLinkText is how a resource link a tool answered with reads to
// the model.
func resourceLinkText(l *sdk.ResourceLink) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[resource link %s: %s", l.Name, l.URI)
	if l.Title != "" {
		fmt.Fprintf(&b, " — %s", l.Title)
	}
	if l.Description != "" {
		fmt.Fprintf(&b, " — %s", l.Description)
	}
	if l.MIMEType != "" {
		fmt.Fprintf(&b, " (%s)", l.MIMEType)
	}
	b.WriteString("]")
	return b.String()
}

// summarize describes images with the vision model.
// It returns the summary, the vision model's name and what it used.
func summarize(ctx context.Context, ms *registry.Models, imgs []llm.Image) (string, string, llm.Usage, error) {
	p, model, err := ms.Get("vision")
	if err != nil {
		return "", "", llm.Usage{}, err
	}
	resp, err := p.Chat(ctx, llm.Request{Model: model, Messages: []llm.Message{
		llm.User("Describe what these images show, precisely and briefly, for someone who cannot see them.", imgs...),
	}})
	if err != nil {
		return "", model, llm.Usage{}, err
	}
	return resp.Text, model, resp.Usage, nil
}

// saveImage writes an image a tool returned into the node's artifacts.
func saveImage(dir, tool string, n int, img *sdk.ImageContent) (string, error) {
	if dir == "" {
		return "", errors.New("no artifact folder")
	}
	ext := ".png"
	switch img.MIMEType {
	case "image/jpeg":
		ext = ".jpg"
	case "image/gif":
		ext = ".gif"
	case "image/webp":
		ext = ".webp"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	file := filepath.Join(dir, fmt.Sprintf("agent-%s-%d%s", safe(tool), n, ext))
	if err := os.WriteFile(file, img.Data, 0o644); err != nil {
		return "", err
	}
	return file, nil
}

func safe(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, s)
}

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// withUsage keeps what a failing step spent in its error, so the run's
// totals and budget count it.
func withUsage(err error, spent *spend) error {
	if spent.usage.TotalTokens == 0 && spent.cost == 0 {
		return err
	}
	e := node.AsError(err)
	cp := *e
	cp.Details = make(map[string]any, len(e.Details)+1)
	for k, v := range e.Details {
		cp.Details[k] = v
	}
	cp.Details["token_usage"] = spent.directive()
	return &cp
}
