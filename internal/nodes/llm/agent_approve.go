package llm

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// Approval of tool calls: a call of a tool that approve_tools names parks
// the agent's step waiting for a signal (the mechanism of a wait node with
// until: signal). The step records the call and the agent's state — its
// conversation, the calls of the turn still to make, what it spent — so
// that the signal runs the agent on from there without asking the model
// again. {approved: true} runs the call; anything else refuses it, and
// the model gets the refusal (with the signal's reason) as the tool's
// result.

// parkedAgent is the state an agent parks with (the _resume directive).
type parkedAgent struct {
	Messages []llm.Message  `json:"messages"`
	Pending  []llm.ToolCall `json:"pending"`
	Calls    int            `json:"calls"`
	Images   int            `json:"images"`
	LastText string         `json:"last_text"`
	// Usage and CostUSD are what the step spent before it parked (counted
	// in the run already).
	Usage   llm.Usage `json:"usage"`
	CostUSD float64   `json:"cost_usd"`
	// Seq counts the step's waits.
	Seq int `json:"seq"`
}

// approvals is an agent step's approve_tools and, when the step resumes
// after a signal, the decision it brings.
type approvals struct {
	patterns []string
	seq      int // waits of this step so far
	resumed  *parkedAgent
	// decides is set until the signal's decision is used; decided is the
	// id of the call it decides (the first of the calls left).
	decides  bool
	decided  string
	approved bool
	reason   string
}

func approvalsOf(c *node.Call) (*approvals, error) {
	a := &approvals{patterns: c.Strings("approve_tools")}
	r := c.Resume
	if r == nil {
		return a, nil
	}
	b, err := json.Marshal(r.State)
	if err != nil {
		return nil, node.Failf(node.CategoryInternal, "agent_resume", "node %s: reading the state it parked with: %v", c.NodeID, err)
	}
	var st parkedAgent
	if err := json.Unmarshal(b, &st); err != nil || len(st.Pending) == 0 {
		return nil, node.Failf(node.CategoryInternal, "agent_resume", "node %s: the state it parked with is not an agent's (%v)", c.NodeID, err)
	}
	a.resumed, a.seq, a.decides, a.decided = &st, st.Seq, true, st.Pending[0].ID
	if m, ok := r.Signal.(map[string]any); ok {
		a.approved = m["approved"] == true
		a.reason, _ = m["reason"].(string)
	}
	return a, nil
}

// needs reports whether a call of the tool needs approval: approve_tools
// names it as the model sees it, as server.tool, or by the tool's own
// name.
func (a *approvals) needs(names ...string) bool {
	for _, n := range names {
		if n != "" && matchAny(a.patterns, n) {
			return true
		}
	}
	return false
}

// decision returns, for the call the step resumed for, whether it was
// decided and the refusal to give the model when it was denied ("" when
// approved).
func (a *approvals) decision(c *node.Call, tc llm.ToolCall, label string) (bool, string) {
	if !a.decides || tc.ID != a.decided {
		return false, ""
	}
	a.decides = false
	c.Emit("tool_approval", map[string]any{"tool": label, "approved": a.approved, "reason": c.Redact(a.reason)})
	if a.approved {
		return true, ""
	}
	msg := "error: a person did not approve this call of " + label + ", so it did not run"
	if a.reason != "" {
		msg += "; their reason: " + a.reason
	}
	return true, msg
}

// park is the output by which the step waits for the approval of
// pending[0]: what it shows (the tool and its arguments, masked), the
// wait's directives, and what it spent so far (usage, its _token_usage).
func (a *approvals) park(c *node.Call, st parkedAgent, label string, usage map[string]any) (map[string]any, error) {
	tc := st.Pending[0]
	a.seq++
	st.Seq = a.seq
	b, err := json.Marshal(st)
	if err != nil {
		return nil, node.Failf(node.CategoryInternal, "agent_park", "node %s: keeping its state: %v", c.NodeID, err)
	}
	var state any
	if err := json.Unmarshal(b, &state); err != nil {
		return nil, node.Failf(node.CategoryInternal, "agent_park", "node %s: keeping its state: %v", c.NodeID, err)
	}
	args := node.RedactValue(tc.Arguments, c.Redact)
	c.Emit("tool_approval", map[string]any{"tool": label, "arguments": args, "call": st.Calls + 1, "waiting": true})
	return map[string]any{
		"approval": map[string]any{"tool": label, "arguments": args, "call": st.Calls + 1,
			"hint": fmt.Sprintf(`skein signal %s %s --data '{"approved": true}' (or {"approved": false, "reason": "…"})`, c.RunID, c.NodeID)},
		"_await": "signal", "_await_name": awaitName(a.seq, label, tc.Arguments), "_resume": state,
		"_token_usage": usage,
	}, nil
}

// before is what the step spent before it last parked.
func (a *approvals) before() (llm.Usage, float64) {
	if a.resumed == nil {
		return llm.Usage{}, 0
	}
	return a.resumed.Usage, a.resumed.CostUSD
}

// awaitName names a wait for approval: the step's seq-th, of this call.
// A signal given for one call never decides another: were the agent to
// start over (its parked state could not be reused), a different call
// waits under another name.
func awaitName(seq int, label string, args map[string]any) string {
	b, _ := json.Marshal(args) // map keys in order
	h := sha256.Sum256(append([]byte(label+"\x00"), b...))
	return fmt.Sprintf("%d-%x", seq, h[:4])
}
