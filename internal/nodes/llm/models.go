package llm

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/skeinhq/skein/expr"
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
	pick, cfg := m.pick(name)
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

// pick returns the model a name resolves to and its llm: entry (nil when
// the workflow declares none of the chain: the environment alone).
func (m *Models) pick(name string) (string, *workflow.LLMConfig) {
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
	if m.w != nil {
		for _, n := range chain {
			if c := m.w.LLMConfig(n); c != nil {
				return n, c
			}
		}
	}
	return name, nil
}

// Check resolves a model name as Get does — the workflow's llm: entry,
// then the environment — without building a provider, rendering
// templates or calling anything: what would stop Get, said before a run.
// It returns the name of the entry used.
func (m *Models) Check(name string) (string, error) {
	pick, cfg := m.pick(name)
	conf := workflow.LLMConfig{Name: pick}
	if cfg != nil {
		conf = *cfg
	}
	if expr.HasTemplate(conf.BaseURL) {
		conf.BaseURL = "http://base-url.invalid" // known only when the run renders it
	}
	if p, _ := m.getenv(llm.EnvProvider); conf.Provider == "" && p != "" {
		if known := llm.Providers(); !slices.Contains(known, strings.ToLower(strings.TrimSpace(p))) {
			return pick, fmt.Errorf("llm %q: unknown provider %q in %s (providers: %s)", pick, p, llm.EnvProvider, strings.Join(known, ", "))
		}
	}
	_, err := llm.Resolve(conf, m.getenv)
	return pick, err
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
