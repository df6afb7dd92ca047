package llm

import (
	"context"
	"fmt"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/node"
)

// chain is the models a node may call, in order: its model, then its
// fallbacks (model: [primary, fallback, …]). A call goes to the model that
// answered last; when that model is exhausted — rate limited, failing with
// a 5xx status, timed out or unreachable after its own retries — the next
// one is tried, and answers the node's later calls too. Any other error (a
// refused request, a bad key) is the node's error: another model would
// not fix it.
type chain struct {
	ms      *registry.Models
	entries []string
	cur     int
	// warnedWhole is set once a warning said that a server answered a
	// streamed request whole: one warning per step.
	warnedWhole bool
}

// modelChain reads the node's model parameter: one name or a list.
func modelChain(c *node.Call, ms *registry.Models) (*chain, error) {
	var entries []string
	switch v := c.Params["model"].(type) {
	case string:
		entries = []string{v}
	case []any:
		entries = c.Strings("model")
	}
	if len(entries) == 0 {
		entries = []string{""} // default
	}
	for _, e := range entries {
		if _, _, err := ms.Get(e); err != nil {
			return nil, err
		}
	}
	return &chain{ms: ms, entries: entries}, nil
}

// first is the name of the model calls go to now, and its entry.
func (ch *chain) first() (entry, model string) {
	entry = ch.entries[ch.cur]
	_, model, _ = ch.ms.Get(entry)
	return entry, model
}

// call sends req through do to the current model and, when it is
// exhausted, to the next ones, each after a check of the run's budget and
// an llm_call event (ev's fields and the model's name). Every reply is
// charged to spent at its model's price (a reply do returns with an error
// too: a failed re-ask). It returns the reply and the name of the model
// that answered, or the model that failed with its error.
func (ch *chain) call(ctx context.Context, c *node.Call, spent *spend, ev map[string]any, req llm.Request,
	do func(p llm.Provider, req llm.Request) (*llm.Response, error)) (*llm.Response, string, error) {
	for i := ch.cur; ; i++ {
		entry := ch.entries[i]
		p, model, err := ch.ms.Get(entry)
		if err != nil {
			return nil, model, err
		}
		if err := checkBudget(c, ch.ms, entry, model, spent); err != nil {
			return nil, model, err
		}
		data := map[string]any{"model": model}
		for k, v := range ev {
			data[k] = v
		}
		c.Emit("llm_call", data)
		req.Model = model
		resp, err := do(p, req)
		if resp != nil {
			spent.add(c, ch.ms, entry, model, resp.Usage)
			ch.warnWhole(c, entry, model, resp)
		}
		if err == nil {
			ch.cur = i
			return resp, model, nil
		}
		if resp != nil || i+1 == len(ch.entries) || ctx.Err() != nil || !exhausted(err) {
			return resp, model, err
		}
		_, next, _ := ch.ms.Get(ch.entries[i+1])
		c.Emit("model_fallback", map[string]any{"from": model, "to": next, "error": c.Redact(node.AsError(err).Message),
			"message": fmt.Sprintf("model %s is exhausted; trying %s", model, next)})
	}
}

// warnWhole records, the first time in a step, that the server of model
// (named entry in llm:) answered a streamed request with the whole reply
// in one JSON body: the reply was read whole, and the node should not ask
// for a stream.
func (ch *chain) warnWhole(c *node.Call, entry, model string, resp *llm.Response) {
	if !resp.Unstreamed || ch.warnedWhole {
		return
	}
	ch.warnedWhole = true
	if entry == "" {
		entry = "default"
	}
	c.Emit("warning", map[string]any{"model": model, "unstreamed": true, "message": fmt.Sprintf(
		"node %s: the server of model %s (llm: %s) ignored the request for a stream and answered with the whole reply as one JSON body; "+
			"it was read whole, without llm_delta events while it was written. Set stream: false on node %s, "+
			"or on the model for every node (llm: {%s: {…, stream: false}}), to ask for the whole reply",
		c.NodeID, model, entry, c.NodeID, entry)})
}

// exhausted reports whether a model call failed in a way another model may
// not: a rate limit, a server error, a timeout, no connection.
func exhausted(err error) bool {
	e := node.AsError(err)
	switch e.Category {
	case llm.CategoryRateLimit, llm.CategoryTimeout, node.CategoryConnection:
		return true
	case llm.CategoryHTTP:
		status, _ := e.Details["status"].(int)
		return status >= 500
	}
	return false
}
