package engine

import (
	"fmt"
	"sync"

	"github.com/skeinhq/skein/node"
)

// Budget counts the tokens and cost of a run against the workflow's
// limits. A subworkflow's child run has a budget of its own (its file's
// limits:) whose Parent is the parent run's: what the child spends counts
// against both, so one budget covers a whole run tree.
type Budget struct {
	MaxTokens  int
	MaxCostUSD float64
	// Parent is the budget of the parent run (nil for a top-level run).
	Parent *Budget

	mu     sync.Mutex
	tokens int
	cost   float64
}

// NewBudget makes the budget of a run under limits, having spent tokens
// and cost already (a resumed run goes on from its recorded spend).
func NewBudget(maxTokens int, maxCostUSD float64, parent *Budget, tokens int, cost float64) *Budget {
	return &Budget{MaxTokens: maxTokens, MaxCostUSD: maxCostUSD, Parent: parent, tokens: tokens, cost: cost}
}

// Add counts usage against the budget and its parents.
func (b *Budget) Add(tokens int, cost float64) {
	for ; b != nil; b = b.Parent {
		b.mu.Lock()
		b.tokens += tokens
		b.cost += cost
		b.mu.Unlock()
	}
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
// top, so a step that loops (an agent) stops at the limit too. The
// limits of the parent runs are checked too.
func (b *Budget) CheckExtra(tokens int, cost float64) error {
	for lvl := b; lvl != nil; lvl = lvl.Parent {
		if err := lvl.checkOwn(tokens, cost, lvl != b); err != nil {
			return err
		}
	}
	return nil
}

// CostLimited reports whether b or a parent limits the cost.
func (b *Budget) CostLimited() bool {
	for ; b != nil; b = b.Parent {
		if b.MaxCostUSD > 0 {
			return true
		}
	}
	return false
}

func (b *Budget) checkOwn(tokens int, cost float64, parent bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	tokens += b.tokens
	cost += b.cost
	whose := "the run's"
	if parent {
		whose = "the parent run's"
	}
	if b.MaxTokens > 0 && tokens >= b.MaxTokens {
		return &node.Error{Code: "budget_exceeded", Category: CategoryBudget, Permanent: true,
			Message: fmt.Sprintf("%s token budget is spent: %d tokens used, limits.max_tokens is %d", whose, tokens, b.MaxTokens)}
	}
	if b.MaxCostUSD > 0 && cost >= b.MaxCostUSD {
		return &node.Error{Code: "budget_exceeded", Category: CategoryBudget, Permanent: true,
			Message: fmt.Sprintf("%s cost budget is spent: $%.4f used, limits.max_cost_usd is $%.4f", whose, cost, b.MaxCostUSD)}
	}
	return nil
}

// Spent is what a run spent: tokens and US dollars.
type Spent struct {
	Tokens  int
	CostUSD float64
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
