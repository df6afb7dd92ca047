package llm

import (
	"slices"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/node"
)

// spend is what a step's model calls used, each reply priced at the model
// that made it (an agent's vision summaries at the vision model's price).
type spend struct {
	usage llm.Usage
	cost  float64
	// unpriced are the models without a price that answered.
	unpriced []string
}

// add counts a reply of model (named entry in llm:) and, the first time a
// model without a price answers, records a warning that says how to set
// one.
func (s *spend) add(c *node.Call, ms *registry.Models, entry, model string, u llm.Usage) {
	s.usage = s.usage.Add(u)
	cost, known := ms.Cost(model, u)
	s.cost += cost
	if known || slices.Contains(s.unpriced, model) {
		return
	}
	s.unpriced = append(s.unpriced, model)
	c.Emit("warning", map[string]any{"model": model, "unpriced": true, "message": ms.Unpriced(entry, model, "its cost counts as $0")})
}

// directive is the _token_usage directive of what was spent.
func (s *spend) directive() map[string]any {
	return map[string]any{
		"input_tokens": s.usage.InputTokens, "output_tokens": s.usage.OutputTokens, "total_tokens": s.usage.TotalTokens,
		"cost_usd": s.cost, "priced": len(s.unpriced) == 0,
	}
}

// categoryBudget is the category of a budget error (the engine's
// CategoryBudget): never retried, never repaired.
const categoryBudget = "budget_exceeded"

// checkBudget checks the run's budget with what this step has spent so far
// counted on top, before a call to model (named entry in llm:). Under a
// cost limit, a model without a price is refused: its cost could not be
// counted.
func checkBudget(c *node.Call, ms *registry.Models, entry, model string, spent *spend) error {
	b, err := node.BudgetService.Get(c)
	if err != nil {
		return err
	}
	if err := b.CheckExtra(spent.usage.TotalTokens, spent.cost); err != nil {
		return err
	}
	if _, known := ms.Cost(model, llm.Usage{}); !known && b.CostLimited() {
		return &node.Error{Code: "model_unpriced", Category: categoryBudget, Permanent: true,
			Message: ms.Unpriced(entry, model, "limits.max_cost_usd cannot count what it costs")}
	}
	return nil
}

// models are the run's models.
func models(c *node.Call) (*registry.Models, error) {
	return registry.Service.Get(c)
}
