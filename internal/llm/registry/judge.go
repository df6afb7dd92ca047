package registry

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

var _ node.Judge = (*Models)(nil)

// JudgeValue decides a guardrail's judge: prompt, asking whether value
// passes. It returns the verdict, the model's reason and the usage.
func (m *Models) JudgeValue(ctx context.Context, modelName, prompt string, value any) (bool, string, map[string]any, error) {
	if modelName == "" {
		modelName = "judge"
	}
	p, model, err := m.Get(modelName)
	if err != nil {
		return false, "", nil, err
	}
	val, _ := json.MarshalIndent(value, "", "  ")
	schema := map[string]any{
		"type": "object", "required": []any{"pass", "reason"},
		"properties": map[string]any{"pass": map[string]any{"type": "boolean"}, "reason": map[string]any{"type": "string"}},
	}
	text := fmt.Sprintf("%s\n\nThe value to judge:\n%s\n\nAnswer pass (true or false) and a short reason.", prompt, clip(string(val), 16<<10))
	v, resp, err := llm.ChatJSON(ctx, p, llm.Request{Model: model, Messages: []llm.Message{llm.User(text)}}, schema)
	var used map[string]any
	if resp != nil {
		used = m.usage(model, resp.Usage)
	}
	if err != nil {
		return false, "", used, err
	}
	obj, _ := v.(map[string]any)
	pass, _ := obj["pass"].(bool)
	reason, _ := obj["reason"].(string)
	return pass, reason, used, nil
}

// usage is the _token_usage directive of one reply of model.
func (m *Models) usage(model string, u llm.Usage) map[string]any {
	cost, known := m.Cost(model, u)
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.TotalTokens,
		"cost_usd": cost, "priced": known,
	}
}

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
