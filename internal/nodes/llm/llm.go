package llm

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// LLMKind calls a model once.
type LLMKind struct{}

var _ node.Kind = (*LLMKind)(nil)

// Run sends the prompt (or messages) and returns {text} or, with a schema,
// {json, text}, plus usage as the _token_usage directive.
func (LLMKind) Run(ctx context.Context, c *node.Call) (map[string]any, error) {
	ms, err := models(c)
	if err != nil {
		return nil, err
	}
	ch, err := modelChain(c, ms)
	if err != nil {
		return nil, err
	}
	var spent spend
	entry, model := ch.first()
	if err := checkBudget(c, ms, entry, model, &spent); err != nil {
		return nil, err
	}
	mem, err := memoryOf(c)
	if err != nil {
		return nil, err
	}
	var req llm.Request
	if sys := c.String("system"); sys != "" {
		req.Messages = append(req.Messages, llm.System(sys))
	}
	past, err := mem.recall(ctx)
	if err != nil {
		return nil, err
	}
	req.Messages = append(req.Messages, past...)
	ownFrom := len(req.Messages) // this turn's messages start here
	conv, err := messageList(c)
	if err != nil {
		return nil, err
	}
	req.Messages = append(req.Messages, conv...)
	if prompt := c.String("prompt"); prompt != "" {
		imgs, err := llm.ReadImages(c.Files, "images", c.Params["images"])
		if err != nil {
			return nil, err
		}
		req.Messages = append(req.Messages, llm.User(prompt, imgs...))
	}
	if err := sampling(c, &req); err != nil {
		return nil, err
	}
	flush := stream(c, &req)
	schema := c.Map("schema")
	var answer any
	resp, modelName, err := ch.call(ctx, c, &spent, map[string]any{"messages": len(req.Messages)}, req,
		func(p llm.Provider, req llm.Request) (*llm.Response, error) {
			if schema == nil {
				return p.Chat(ctx, req)
			}
			v, r, err := llm.ChatJSON(ctx, p, req, schema)
			answer = v
			return r, err // both replies of a failed re-ask are billed
		})
	if err != nil {
		return nil, withUsage(err, &spent)
	}
	flush()
	out := map[string]any{"model": modelName, "text": resp.Text}
	if schema != nil {
		out["json"] = answer
		if conf, ok := confidenceOf(schema, answer); ok {
			out["_confidence"] = conf
		}
	}
	if route, ok := replyRoute(out["json"], resp.Text); ok {
		out["_route"] = route
	}
	if err := mem.remember(ctx, c, lastUserText(req.Messages[ownFrom:]), resp.Text); err != nil {
		return nil, withUsage(err, &spent)
	}
	u := spent.directive()
	out["usage"] = u
	out["_token_usage"] = u
	return out, nil
}

// lastUserText is the text of the last user message: what a node with
// memory said in its turn of the conversation.
func lastUserText(msgs []llm.Message) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == llm.RoleUser {
			return msgs[i].Content
		}
	}
	return ""
}

// replyRoute is the _route of a reply that is a JSON object holding one:
// the schema's json, or else the whole text (a model asked to answer
// {"_route": "billing"} routes the run as a script printing it does).
func replyRoute(js any, text string) (any, bool) {
	if m, ok := js.(map[string]any); ok {
		r, ok := m["_route"]
		return r, ok && r != nil
	}
	t := strings.TrimSpace(text)
	if !strings.HasPrefix(t, "{") {
		return nil, false
	}
	var m map[string]any
	if json.Unmarshal([]byte(t), &m) != nil {
		return nil, false
	}
	r, ok := m["_route"]
	return r, ok && r != nil
}
