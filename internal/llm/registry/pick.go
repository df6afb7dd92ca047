package registry

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/llm"
)

// pickSchema is the answer PickItem asks for.
var pickSchema = map[string]any{
	"type": "object", "required": []any{"index", "reason"},
	"properties": map[string]any{
		"index":  map[string]any{"type": "integer", "minimum": 0},
		"reason": map[string]any{"type": "string"},
	},
}

// PickItem asks a model which of items matches description (an mcp node's
// resolve:). It returns the item's number, counting from 1 (0: none
// matches), the model's reason, the model and the usage directive of the
// call (with the error too when the model answered). An empty modelName is
// the default model.
func (m *Models) PickItem(ctx context.Context, modelName, description string, items []any) (int, string, string, map[string]any, error) {
	if modelName == "" {
		modelName = "default"
	}
	p, model, err := m.Get(modelName)
	if err != nil {
		return 0, "", "", nil, err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "A workflow step needs one item of the list below: %s\n\n", description)
	b.WriteString("The items, numbered:\n")
	for i, it := range items {
		raw, _ := json.Marshal(it)
		fmt.Fprintf(&b, "%d. %s\n", i+1, clip(string(raw), 1<<10))
	}
	fmt.Fprintf(&b, "\nAnswer with the number of the item that matches (index, 1 to %d) and a short reason; index 0 if none does.", len(items))
	v, resp, err := llm.ChatJSON(ctx, p, llm.Request{Model: model, Messages: []llm.Message{llm.User(b.String())}}, pickSchema)
	var used map[string]any
	if resp != nil {
		used = m.usage(model, resp.Usage)
	}
	if err != nil {
		return 0, "", model, used, err
	}
	obj, _ := v.(map[string]any)
	reason, _ := obj["reason"].(string)
	index, _ := obj["index"].(float64) // the schema makes it a whole number
	return int(index), reason, model, used, nil
}
