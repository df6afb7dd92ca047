package registry

import (
	"fmt"
	"net/http"
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

// Service is the service under which the AI kinds find the run's models.
var Service = node.NewService[*Models]("LLM models")

// Models resolves the model names of a workflow's llm: section (with the
// environment fallbacks of llm.New) into providers, once per run.
type Models struct {
	w      *workflow.Workflow
	getenv func(string) (string, bool)
	// Render renders templates in a model's config (api_key:
	// "{{ secrets.KEY }}"); nil leaves them as written.
	Render func(string) (string, error)
	// HTTPClient, when set, is the providers' HTTP client (a cassette's
	// transport); nil: each provider's own.
	HTTPClient *http.Client

	mu     sync.Mutex
	cache  map[string]*model
	prices map[string]llm.Price // the workflow's price: entries, by model name
}

type model struct {
	p   llm.Provider
	cfg workflow.LLMConfig
}

// New makes the resolver of a workflow's models.
func New(w *workflow.Workflow, getenv func(string) (string, bool)) *Models {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	m := &Models{w: w, getenv: getenv, cache: map[string]*model{}, prices: map[string]llm.Price{}}
	if w != nil {
		for _, c := range w.LLM {
			if c.Price != nil && c.Model != "" && !expr.HasTemplate(c.Model) {
				m.prices[strings.ToLower(strings.TrimSpace(c.Model))] = llm.Price{InputPerMTok: c.Price.InputPerMTok, OutputPerMTok: c.Price.OutputPerMTok}
			}
		}
	}
	return m
}

// Cost is what usage u of a model cost in US dollars, at the price the
// workflow sets for it (llm.<name>.price) or else the one Skein knows;
// known is false when there is none, and the cost is then 0.
func (m *Models) Cost(model string, u llm.Usage) (usd float64, known bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return llm.Cost(model, u, m.prices)
}

// Priced resolves a model name as Check does and reports the entry used,
// the model, and whether its price is known (a model that does not
// resolve, or is named by a template, counts as priced: Check and the run
// say what is wrong with it).
func (m *Models) Priced(name string) (entry, model string, known bool) {
	pick, cfg := m.pick(name)
	conf := workflow.LLMConfig{Name: pick}
	if cfg != nil {
		conf = *cfg
	}
	if conf.Price != nil {
		return pick, conf.Model, true
	}
	if expr.HasTemplate(conf.BaseURL) {
		conf.BaseURL = "http://base-url.invalid"
	}
	resolved, err := llm.Resolve(conf, m.getenv)
	if err != nil || resolved.Model == "" || expr.HasTemplate(resolved.Model) {
		return pick, resolved.Model, true
	}
	_, known = m.Cost(resolved.Model, llm.Usage{})
	return pick, resolved.Model, known
}

// Entry is the name of the llm: entry a model name resolves to ("default"
// for a node without model:), for messages that say what to configure.
func (m *Models) Entry(name string) string {
	pick, _ := m.pick(name)
	return pick
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
	resolved, err := llm.Resolve(conf, m.getenv)
	if err != nil {
		return nil, "", node.AsError(fmt.Errorf("model %s: %w", pick, err))
	}
	if m.HTTPClient != nil {
		resolved.HTTPClient = m.HTTPClient
	}
	p, err := llm.Open(resolved)
	if err != nil {
		return nil, "", node.AsError(fmt.Errorf("model %s: %w", pick, err))
	}
	conf.Model = resolved.Model
	if conf.Price != nil {
		m.prices[strings.ToLower(strings.TrimSpace(conf.Model))] = llm.Price{InputPerMTok: conf.Price.InputPerMTok, OutputPerMTok: conf.Price.OutputPerMTok}
	}
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

// Unpriced says that model, which the name resolved to, has no price,
// what follows (consequence), and how to set one.
func (m *Models) Unpriced(name, model, consequence string) string {
	return fmt.Sprintf("model %s has no known price, so %s; set one in the workflow: llm: {%s: {…, price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}} (US dollars per million tokens)",
		model, consequence, m.Entry(name))
}
