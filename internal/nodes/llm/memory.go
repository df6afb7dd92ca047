package llm

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/memory"
	"github.com/skeinhq/skein/node"
)

// conversation is a node's memory: parameter, rendered: the thread it
// belongs to and the store that keeps it.
type conversation struct {
	thread string
	max    int
	store  memory.Store
	step   memory.Step
}

// memoryOf reads the node's memory: parameter; nil when it has none, or
// when its thread renders empty (a run that is not part of a
// conversation).
func memoryOf(c *node.Call) (*conversation, error) {
	m := c.Map("memory")
	if m == nil {
		return nil, nil
	}
	if errs := checkMemory(m); len(errs) > 0 {
		return nil, node.Failf(node.CategoryValidation, "param_value", "node %s: %s", c.NodeID, errs[0].Message)
	}
	thread, _ := node.Text(m["thread"])
	if strings.TrimSpace(thread) == "" {
		return nil, nil
	}
	mem := &conversation{thread: thread, max: memory.DefaultMaxMessages, step: memory.Step{RunID: c.RunID, Step: fmt.Sprintf("%s/%d", c.NodeID, c.Visit)}}
	if v, ok := m["max_messages"]; ok {
		n, _ := (node.Param{Type: node.Int}).Coerce(v)
		mem.max, _ = n.(int)
	}
	st, err := memory.Service.Get(c)
	if err != nil {
		return nil, err
	}
	mem.store = st
	return mem, nil
}

// recall returns the thread's last messages; none without memory.
func (m *conversation) recall(ctx context.Context) ([]llm.Message, error) {
	if m == nil {
		return nil, nil
	}
	msgs, err := m.store.Recall(ctx, m.thread, m.step, m.max)
	if err != nil {
		return nil, node.AsError(fmt.Errorf("reading the memory of thread %q: %w", m.thread, err))
	}
	return msgs, nil
}

// remember keeps the exchange of a step, masked: what the user said and
// what the model answered.
func (m *conversation) remember(ctx context.Context, c *node.Call, said, answer string) error {
	if m == nil {
		return nil
	}
	msgs := []llm.Message{{Role: llm.RoleUser, Content: c.Redact(said)}, {Role: llm.RoleAssistant, Content: c.Redact(answer)}}
	if said == "" {
		msgs = msgs[1:]
	}
	if err := m.store.Remember(ctx, m.thread, m.step, msgs); err != nil {
		return node.AsError(fmt.Errorf("keeping the memory of thread %q: %w", m.thread, err))
	}
	return nil
}

// memoryKeys are the fields of memory:.
var memoryKeys = []string{"thread", "max_messages"}

// checkMemory reports a memory: parameter that cannot work: no thread, a
// max_messages that is not a number more than 0, an unknown field. A
// templated value is let through.
func checkMemory(m map[string]any) []node.ParamError {
	var errs []node.ParamError
	for k := range m {
		if !slices.Contains(memoryKeys, k) {
			errs = append(errs, node.ParamError{Param: "memory." + k, Message: fmt.Sprintf(
				"memory has no field %q (fields: %s)", k, strings.Join(memoryKeys, ", "))})
		}
	}
	if t, ok := m["thread"]; !ok || t == nil {
		errs = append(errs, node.ParamError{Param: "memory.thread", Message: `memory needs a thread, the conversation it belongs to, such as thread: "{{ trigger.conversation }}"`})
	}
	if v, ok := m["max_messages"]; ok {
		if s, isStr := v.(string); !isStr || !expr.HasTemplate(s) {
			n, err := (node.Param{Type: node.Int}).Coerce(v)
			if i, _ := n.(int); err != nil || i <= 0 {
				errs = append(errs, node.ParamError{Param: "memory.max_messages", Message: fmt.Sprintf(
					"memory.max_messages must be a whole number more than 0, not %v", v)})
			}
		}
	}
	slices.SortFunc(errs, func(a, b node.ParamError) int { return strings.Compare(a.Param, b.Param) })
	return errs
}

// checkMemoryParam checks the memory: parameter as written.
func checkMemoryParam(p map[string]any) []node.ParamError {
	v, ok := p["memory"]
	if !ok {
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil // the type check reports it
	}
	return checkMemory(m)
}
