package llm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/llm"
)

// Judge answers checks with the judge model (llm.judge, else llm.vision,
// else llm.default): one call per node, with the node's output, its last
// tool events and its images as evidence.
type Judge struct {
	Models *Models
}

var _ check.MeteredJudge = (*Judge)(nil)

var verdictSchema = map[string]any{
	"type":     "object",
	"required": []any{"verdicts"},
	"properties": map[string]any{
		"verdicts": map[string]any{
			"type": "array",
			"items": map[string]any{
				"type":     "object",
				"required": []any{"check_name", "verdict", "reasoning"},
				"properties": map[string]any{
					"check_name": map[string]any{"type": "string"},
					"verdict":    map[string]any{"type": "string", "enum": []any{"pass", "fail"}},
					"reasoning":  map[string]any{"type": "string"},
				},
			},
		},
	},
}

// Judge implements check.Judge.
func (j *Judge) Judge(ctx context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, error) {
	v, _, err := j.JudgeMetered(ctx, req)
	return v, err
}

// JudgeMetered implements check.MeteredJudge: the judge's replies are
// priced at the judge model's price.
func (j *Judge) JudgeMetered(ctx context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, check.Usage, error) {
	p, model, err := j.Models.Get("judge")
	if err != nil {
		return nil, check.Usage{}, err
	}
	var paths []any
	for _, p := range req.Images {
		paths = append(paths, p)
	}
	templates := map[string]int{} // check name → its image's number, from 1
	for _, c := range req.Checks {
		if c.Template != "" {
			paths = append(paths, c.Template)
			templates[c.Name] = len(paths)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "You verify whether the workflow step %q did what it should. Judge each check strictly from the evidence; when the evidence does not show it, the verdict is fail.\n\n", req.Node)
	out, _ := json.MarshalIndent(req.Output, "", "  ")
	fmt.Fprintf(&b, "The step's output:\n%s\n\n", clip(string(out), 16<<10))
	if len(req.ToolEvents) > 0 {
		ev, _ := json.MarshalIndent(req.ToolEvents, "", "  ")
		fmt.Fprintf(&b, "Its last tool events:\n%s\n\n", clip(string(ev), 16<<10))
	}
	if len(req.Images) > 0 {
		fmt.Fprintf(&b, "%d screenshot(s) of the result are attached (images 1 to %d).\n\n", len(req.Images), len(req.Images))
	}
	b.WriteString("Checks:\n")
	for _, c := range req.Checks {
		fmt.Fprintf(&b, "- %s: %s", c.Name, c.Text)
		if n, ok := templates[c.Name]; ok {
			fmt.Fprintf(&b, " (the template is image %d; look for it in the screenshots)", n)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nAnswer with one verdict per check, using the check names exactly.")
	imgs, err := images(req.Files, "evidence image", paths)
	if err != nil {
		return nil, check.Usage{}, err
	}
	v, resp, err := llm.ChatJSON(ctx, p, llm.Request{Model: model, Messages: []llm.Message{llm.User(b.String(), imgs...)}}, verdictSchema)
	var used check.Usage
	if resp != nil {
		used.Tokens = resp.Usage.TotalTokens
		var known bool
		used.CostUSD, known = j.Models.Cost(model, resp.Usage)
		if !known {
			used.Warnings = []string{"the judge's " + unpricedMessage(j.Models, "judge", model, "its cost counts as $0")}
		}
	}
	if err != nil {
		return nil, used, err
	}
	raw, _ := json.Marshal(v)
	var reply struct {
		Verdicts []check.JudgeVerdict `json:"verdicts"`
	}
	if err := json.Unmarshal(raw, &reply); err != nil {
		return nil, used, fmt.Errorf("the judge's reply has no verdicts: %w", err)
	}
	return reply.Verdicts, used, nil
}

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
