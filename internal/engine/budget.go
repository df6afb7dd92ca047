package engine

import (
	"fmt"
	"sync"

	"github.com/skeinhq/skein/node"
)

// Budget counts the tokens and cost of a run (and of its subworkflows,
// which share their parent's) against the workflow's limits.
type Budget struct {
	MaxTokens  int
	MaxCostUSD float64

	mu     sync.Mutex
	tokens int
	cost   float64
}

// Add counts a step's usage.
func (b *Budget) Add(tokens int, cost float64) {
	b.mu.Lock()
	b.tokens += tokens
	b.cost += cost
	b.mu.Unlock()
}

// Used returns what was spent so far.
func (b *Budget) Used() (tokens int, cost float64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.tokens, b.cost
}

// Check fails with budget_exceeded once a limit is reached; AI kinds call
// it before each model call.
func (b *Budget) Check() error { return b.CheckExtra(0, 0) }

// CheckExtra is Check counting what the running step has spent so far on
// top, so a step that loops (an agent) stops at the limit too.
func (b *Budget) CheckExtra(tokens int, cost float64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	tokens += b.tokens
	cost += b.cost
	if b.MaxTokens > 0 && tokens >= b.MaxTokens {
		return &node.Error{Code: "budget_exceeded", Category: CategoryBudget, Permanent: true,
			Message: fmt.Sprintf("the run's token budget is spent: %d tokens used, limits.max_tokens is %d", tokens, b.MaxTokens)}
	}
	if b.MaxCostUSD > 0 && cost >= b.MaxCostUSD {
		return &node.Error{Code: "budget_exceeded", Category: CategoryBudget, Permanent: true,
			Message: fmt.Sprintf("the run's cost budget is spent: $%.4f used, limits.max_cost_usd is $%.4f", cost, b.MaxCostUSD)}
	}
	return nil
}

// CategoryBudget is the error category of a spent budget.
const CategoryBudget = "budget_exceeded"

// failedUsage reads what a failed attempt spent, kept by the kind in its
// error's details.
func failedUsage(e *node.Error) (int, float64) {
	if e == nil {
		return 0, 0
	}
	u, ok := e.Details["token_usage"].(map[string]any)
	if !ok {
		return 0, 0
	}
	return usageOf(map[string]any{"_token_usage": u})
}

// usageOf reads the _token_usage directive: {input_tokens, output_tokens,
// total_tokens, cost_usd}.
func usageOf(d map[string]any) (tokens int, cost float64) {
	u, ok := d["_token_usage"].(map[string]any)
	if !ok {
		return 0, 0
	}
	switch t := u["total_tokens"].(type) {
	case int:
		tokens = t
	case float64:
		tokens = int(t)
	}
	if tokens == 0 {
		in, _ := u["input_tokens"].(int)
		out, _ := u["output_tokens"].(int)
		tokens = in + out
	}
	switch c := u["cost_usd"].(type) {
	case float64:
		cost = c
	case int:
		cost = float64(c)
	}
	return tokens, cost
}
