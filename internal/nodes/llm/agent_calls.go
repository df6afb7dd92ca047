package llm

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/mcp"
	"github.com/skeinhq/skein/node"
)

// toolRound makes the tool calls of an agent's turns: MCP tools and
// workflow tools, each call approved first when approve_tools names it.
// It works on the step's state, which AgentKind.Run holds.
type toolRound struct {
	c         *node.Call
	ms        *registry.Models
	pool      *mcp.Pool
	children  node.NamedChildren
	byName    map[string]offered
	workflows map[string]workflowTool
	imageMode string
	maxCalls  int
	ap        *approvals
	finish    func(text, stopped string) (map[string]any, error)

	// The step's state.
	msgs     *[]llm.Message
	pending  *[]llm.ToolCall // the calls of the model's turn still to make
	calls    *int
	images   *int // images saved
	lastText *string
	spent    *spend
	// childSpent is what workflow tools spent, as their host reports it.
	childSpent *childSpend
}

// run makes the pending calls, adding each result to the conversation.
// It returns nil, nil when they are made and the model's next turn is
// due; else what the step ends with: its output at max_tool_calls, the
// output by which it parks for an approval, or an error.
func (r *toolRound) run(ctx context.Context) (map[string]any, error) {
	c, ms, spent := r.c, r.ms, r.spent
	for len(*r.pending) > 0 {
		tc := (*r.pending)[0]
		if *r.calls >= r.maxCalls {
			c.Emit("warning", map[string]any{"message": fmt.Sprintf(
				"the agent stopped after %d tool calls without answering (max_tool_calls); its output is its last text and stopped: max_tool_calls", *r.calls)})
			return r.finish(*r.lastText, "max_tool_calls")
		}
		o, known := r.byName[tc.Name]
		wt, isWorkflow := r.workflows[tc.Name]
		label := strings.Replace(tc.Name, toolSep, ".", 1)
		if isWorkflow {
			label = tc.Name
		}
		refused := ""
		if (isWorkflow || known) && r.ap.needs(label, o.tool) {
			decided, refusal := r.ap.decision(c, tc, label)
			if !decided {
				bu, bc := r.ap.before()
				return r.ap.park(c, parkedAgent{Messages: *r.msgs, Pending: *r.pending, Calls: *r.calls, Images: *r.images, LastText: *r.lastText,
					Usage: bu.Add(spent.usage), CostUSD: bc + spent.cost}, label, r.childSpent.onto(spent.directive()))
			}
			refused = refusal
		}
		*r.pending = (*r.pending)[1:]
		*r.calls++
		calls := *r.calls
		c.Emit("tool_call", map[string]any{"tool": label, "arguments": node.RedactValue(tc.Arguments, c.Redact), "call": calls})
		start := time.Now()
		var content string
		var imgs []llm.Image
		isErr := false
		switch {
		case refused != "":
			content, isErr = refused, true
		case isWorkflow && tc.Arguments == nil && strings.TrimSpace(tc.RawArguments) != "":
			content, isErr = fmt.Sprintf("error: the arguments of %s must be a JSON object, not %s", label, clip(tc.RawArguments, 200)), true
		case isWorkflow:
			var err error
			if content, isErr, err = callWorkflow(ctx, c, r.children, wt, tc.Arguments, calls, r.childSpent); err != nil {
				return nil, withUsage(err, spent)
			}
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
			res, err := r.pool.CallToolProgress(ctx, o.server, o.tool, tc.Arguments, progress)
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
					*r.images++
					if file, err := saveImage(c.ArtifactDir, o.tool, *r.images, x); err == nil {
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
		if len(imgs) > 0 && r.imageMode != "pass" && ms.Has("vision") {
			if _, vision, err := ms.Get("vision"); err == nil {
				if err := checkBudget(c, ms, "vision", vision, spent); err != nil {
					return nil, withUsage(err, spent)
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
		*r.msgs = append(*r.msgs, llm.ToolResult(tc.ID, content, imgs...))
	}
	return nil, nil
}
