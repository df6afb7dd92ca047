package llm

import (
	"fmt"
	"os"
	"sync"

	"github.com/skeinhq/skein/internal/llm"
	_ "github.com/skeinhq/skein/internal/llm/anthropic" // registers the anthropic provider
	_ "github.com/skeinhq/skein/internal/llm/openai"    // registers the openai provider
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// ModelsService is the service under which the AI kinds find the run's
// models.
var ModelsService = node.NewService[*Models]("LLM models")

// Models resolves the model names of a workflow's llm: section (with the
// environment fallbacks of llm.New) into providers, once per run.
type Models struct {
	w      *workflow.Workflow
	getenv func(string) (string, bool)
	// Render renders templates in a model's config (api_key:
	// "{{ secrets.KEY }}"); nil leaves them as written.
	Render func(string) (string, error)

	mu    sync.Mutex
	cache map[string]*model
}

type model struct {
	p   llm.Provider
	cfg workflow.LLMConfig
}

// NewModels makes the resolver of a workflow's models.
func NewModels(w *workflow.Workflow, getenv func(string) (string, bool)) *Models {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	return &Models{w: w, getenv: getenv, cache: map[string]*model{}}
}

// Has reports whether the workflow declares the named model.
func (m *Models) Has(name string) bool { return m.w != nil && m.w.LLMConfig(name) != nil }

// Get returns the provider for a model name. The judge falls back to the
// vision model, then to default; an undeclared name uses the environment
// (SKEIN_LLM_*, OPENAI_API_KEY, ANTHROPIC_API_KEY).
func (m *Models) Get(name string) (llm.Provider, string, error) {
	if name == "" {
		name = "default"
	}
	chain := []string{name}
	if name == "judge" || name == "repair" {
		chain = append(chain, "vision", "default")
	}
	if name != "default" && name != "judge" && name != "repair" && name != "vision" {
		chain = append(chain, "default")
	}
	pick := name
	var cfg *workflow.LLMConfig
	for _, n := range chain {
		if m.w != nil {
			if c := m.w.LLMConfig(n); c != nil {
				pick, cfg = n, c
				break
			}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok := m.cache[pick]; ok {
		return c.p, c.cfg.Model, nil
	}
	var conf workflow.LLMConfig
	if cfg != nil {
		conf = *cfg
	} else {
		conf = workflow.LLMConfig{Name: pick}
	}
	if m.Render != nil {
		for _, f := range []*string{&conf.APIKey, &conf.BaseURL, &conf.Model} {
			v, err := m.Render(*f)
			if err != nil {
				return nil, "", node.Failf(node.CategoryTemplate, "llm_config", "model %s: %v", pick, err)
			}
			*f = v
		}
	}
	p, err := llm.New(conf, m.getenv)
	if err != nil {
		return nil, "", node.AsError(fmt.Errorf("model %s: %w", pick, err))
	}
	resolved, _ := llm.Resolve(conf, m.getenv)
	conf.Model = resolved.Model
	m.cache[pick] = &model{p: p, cfg: conf}
	return p, conf.Model, nil
}

// usage turns a response's usage into the _token_usage directive.
func usage(model string, u llm.Usage) map[string]any {
	cost, known := llm.Cost(model, u, nil)
	return map[string]any{
		"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "total_tokens": u.TotalTokens,
		"cost_usd": cost, "priced": known,
	}
}

func checkBudget(c *node.Call) error { return checkBudgetSpent(c, "", llm.Usage{}) }

// checkBudgetSpent checks the run's budget with what this step has spent so
// far counted on top.
func checkBudgetSpent(c *node.Call, model string, spent llm.Usage) error {
	b, err := node.BudgetService.Get(c)
	if err != nil {
		return err
	}
	cost, _ := llm.Cost(model, spent, nil)
	return b.CheckExtra(spent.TotalTokens, cost)
}

func models(c *node.Call) (*Models, error) {
	return ModelsService.Get(c)
}
