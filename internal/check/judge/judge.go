// Package judge answers the checks that need a model (screen checks and
// expect:, see internal/check) by asking the workflow's judge model: LLM is
// a check.MeteredJudge over the llm provider interface, one call per node,
// with the node's output, its last tool events and its images as evidence,
// and a JSON reply of one verdict per check. What each call used is priced
// at the judge model's price.
package judge

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/workflow"
)

// Models are the models a judge asks; internal/llm/registry's Models
// resolves them from a workflow's llm: section.
type Models interface {
	// Get returns the provider and the model a model name resolves to
	// ("judge" falls back to the vision model, then to default).
	Get(name string) (llm.Provider, string, error)
	// Cost is what usage u of model cost in US dollars; known is false
	// when the model has no price, and the cost is then 0.
	Cost(model string, u llm.Usage) (usd float64, known bool)
	// Unpriced says that model, which name resolved to, has no price,
	// what follows (consequence), and how to set one.
	Unpriced(name, model, consequence string) string
}

// LLM answers checks with the judge model (llm.judge, else llm.vision,
// else llm.default): one call per node, with the node's output, its last
// tool events and its images as evidence.
type LLM struct {
	Models Models
}

var _ check.MeteredJudge = (*LLM)(nil)

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
func (j *LLM) Judge(ctx context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, error) {
	v, _, err := j.JudgeMetered(ctx, req)
	return v, err
}

// JudgeMetered implements check.MeteredJudge: the judge's replies are
// priced at the judge model's price.
func (j *LLM) JudgeMetered(ctx context.Context, req check.JudgeRequest) ([]check.JudgeVerdict, check.Usage, error) {
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
	imgs, err := llm.ReadImages(req.Files, "evidence image", paths)
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
			used.Warnings = []string{"the judge's " + j.Models.Unpriced("judge", model, "its cost counts as $0")}
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

// clip cuts s to n bytes, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// ForWorkflow is the judge of a workflow's checks: its judge model, else
// vision, else default, else the environment's (SKEIN_LLM_*). Its config's
// templates (api_key: "{{ secrets.KEY }}") render with the run's secrets,
// as the nodes' models do.
func ForWorkflow(w *workflow.Workflow, lookupEnv func(string) (string, bool), secretValues map[string]string) check.Judge {
	m := registry.New(w, lookupEnv)
	m.Render = secrets.Renderer(secretValues)
	return &LLM{Models: m}
}
