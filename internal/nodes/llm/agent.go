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
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/llm"
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
	patterns, allowed := c.Strings("tools"), c.Strings("allowed_tools")
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

	var msgs []llm.Message
	if sys := c.String("system"); sys != "" {
		msgs = append(msgs, llm.System(sys))
	}
	past, err := mem.recall(ctx)
	if err != nil {
		return nil, err
	}
	msgs = append(msgs, past...)
	msgs = append(msgs, llm.User(c.String("prompt")))
	var spent spend
	calls, imagesSaved := 0, 0
	var answer any // the final answer parsed, with a schema
	finish := func(text, stopped string) (map[string]any, error) {
		u := spent.directive()
		out := map[string]any{"text": text, "tool_calls": calls, "usage": u, "model": modelName, "stopped": stopped, "_token_usage": u}
		if sch != nil && stopped == "" {
			out["json"] = answer
		}
		if stopped == "" {
			if err := mem.remember(ctx, c, c.String("prompt"), text); err != nil {
				return nil, withUsage(err, &spent)
			}
		}
		return out, nil
	}
	lastText := ""
	for {
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
		for _, tc := range resp.ToolCalls {
			if calls >= maxCalls {
				c.Emit("warning", map[string]any{"message": fmt.Sprintf(
					"the agent stopped after %d tool calls without answering (max_tool_calls); its output is its last text and stopped: max_tool_calls", calls)})
				return finish(lastText, "max_tool_calls")
			}
			calls++
			o, known := byName[tc.Name]
			label := strings.Replace(tc.Name, toolSep, ".", 1)
			c.Emit("tool_call", map[string]any{"tool": label, "arguments": node.RedactValue(tc.Arguments, c.Redact), "call": calls})
			start := time.Now()
			var content string
			var imgs []llm.Image
			isErr := false
			switch {
			case !known:
				content, isErr = fmt.Sprintf("error: there is no tool %q", label), true
			case tc.Arguments == nil && strings.TrimSpace(tc.RawArguments) != "":
				// The model wrote arguments that are not a JSON object; the
				// tool would only see none.
				content, isErr = fmt.Sprintf("error: the arguments of %s must be a JSON object, not %s", label, clip(tc.RawArguments, 200)), true
			default:
				progress := func(p mcp.Progress) {
					ev := map[string]any{"tool": label, "progress": p.Progress, "call": calls}
					if p.Total > 0 {
						ev["total"] = p.Total
					}
					if p.Message != "" {
						ev["message"] = clip(c.Redact(p.Message), 2048)
					}
					c.Emit("tool_progress", ev)
				}
				res, err := pool.CallToolProgress(ctx, o.server, o.tool, tc.Arguments, progress)
				if err != nil {
					content, isErr = "error: "+c.Redact(err.Error()), true
					break
				}
				isErr = res.IsError
				var texts []string
				for _, ct := range res.Content {
					switch x := ct.(type) {
					case *sdk.TextContent:
						texts = append(texts, x.Text)
					case *sdk.ImageContent:
						imagesSaved++
						if file, err := saveImage(c.ArtifactDir, o.tool, imagesSaved, x); err == nil {
							texts = append(texts, fmt.Sprintf("[image saved as %s]", filepath.Base(file)))
						} else {
							texts = append(texts, "[image]")
						}
						imgs = append(imgs, llm.Image{MIME: x.MIMEType, Data: x.Data})
					case *sdk.ResourceLink:
						texts = append(texts, resourceLinkText(x))
					case *sdk.EmbeddedResource:
						if r := x.Resource; r != nil && r.Blob == nil {
							texts = append(texts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
						} else if r != nil {
							texts = append(texts, fmt.Sprintf("[resource %s (%s, %d bytes)]", r.URI, r.MIMEType, len(r.Blob)))
						}
					}
				}
				content = strings.Join(texts, "\n")
			}
			c.Emit("tool_result", map[string]any{"tool": label, "text": clip(c.Redact(content), 2048), "images": len(imgs),
				"is_error": isErr, "duration_ms": time.Since(start).Milliseconds()})
			if len(imgs) > 0 && imageMode != "pass" && ms.Has("vision") {
				if _, vision, err := ms.Get("vision"); err == nil {
					if err := checkBudget(c, ms, "vision", vision, &spent); err != nil {
						return nil, withUsage(err, &spent)
					}
				}
				summary, vision, u, err := summarize(ctx, ms, imgs)
				spent.add(c, ms, "vision", vision, u) // at the vision model's price
				if err == nil {
					c.Emit("vision_summary", map[string]any{"tool": label, "text": clip(c.Redact(summary), 2048)}) // masked before it is cut
					content += "\n[image summary] " + summary
					imgs = nil
				}
			}
			msgs = append(msgs, llm.ToolResult(tc.ID, content, imgs...))
		}
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
func summarize(ctx context.Context, ms *Models, imgs []llm.Image) (string, string, llm.Usage, error) {
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
