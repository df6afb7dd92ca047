package llm

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Environment variables New falls back on.
const (
	EnvProvider = "SKEIN_LLM_PROVIDER"
	EnvModel    = "SKEIN_LLM_MODEL"
	EnvBaseURL  = "SKEIN_LLM_BASE_URL"
	EnvAPIKey   = "SKEIN_LLM_API_KEY"
	EnvOpenAI   = "OPENAI_API_KEY"
	EnvClaude   = "ANTHROPIC_API_KEY"
)

// Provider names.
const (
	OpenAI    = "openai"
	Anthropic = "anthropic"
)

// DefaultOpenAIModel is the model of an openai entry that names none, when
// neither SKEIN_LLM_MODEL nor a base URL is set and an API key is: the key
// alone (OPENAI_API_KEY) is enough to call OpenAI.
const DefaultOpenAIModel = "gpt-4.1-mini"

// DefaultMaxTokens is the reply budget of providers whose API requires one
// (Anthropic) when neither the config nor the request sets it.
const DefaultMaxTokens = 4096

// Config is a resolved model configuration, what a Factory gets.
type Config struct {
	// Name is the config's name in the workflow (default, vision, …),
	// used in messages.
	Name     string
	Provider string
	Model    string
	// BaseURL is the API's root; "" is the vendor's. For openai it ends in
	// /v1 (http://localhost:11434/v1 for Ollama); for anthropic it is the
	// host (a trailing /v1 is tolerated).
	BaseURL string
	APIKey  string
	// Headers are sent with every request.
	Headers     map[string]string
	Temperature *float64
	MaxTokens   int
	// NoStream sends every request unstreamed, whatever its Stream says
	// (llm: {…, stream: false}, for a server that does not stream): the
	// reply comes whole and OnText is not called.
	NoStream bool
	// HTTPClient sends the requests; nil is a client of the provider's.
	HTTPClient *http.Client
	Retry      RetryPolicy
}

// A Factory builds a provider from its configuration.
type Factory func(cfg Config) (Provider, error)

// registry maps provider names to factories.
type registry struct {
	mu sync.RWMutex
	m  map[string]Factory
}

var providers = &registry{m: map[string]Factory{}}

// Register makes a provider available under name. It fails on an empty
// name, a nil factory, or a name already taken.
func Register(name string, f Factory) error { return providers.register(name, f) }

// MustRegister is Register that panics on error, for init functions.
func MustRegister(name string, f Factory) {
	if err := Register(name, f); err != nil {
		panic(err)
	}
}

// Providers lists the registered provider names, sorted.
func Providers() []string { return providers.names() }

// Open builds the provider cfg.Provider names from a resolved Config.
func Open(cfg Config) (Provider, error) { return providers.open(cfg) }

func (r *registry) register(name string, f Factory) error {
	if name == "" || f == nil {
		return errors.New("llm: Register needs a name and a factory")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.m[name]; dup {
		return fmt.Errorf("llm: provider %q registered twice", name)
	}
	r.m[name] = f
	workflow.RegisterProvider(name)
	return nil
}

func (r *registry) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	names := make([]string, 0, len(r.m))
	for n := range r.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (r *registry) open(cfg Config) (Provider, error) {
	r.mu.RLock()
	f := r.m[cfg.Provider]
	r.mu.RUnlock()
	if f == nil {
		return nil, configErr(cfg.Name, "unknown provider %q (registered: %s; import internal/llm/openai and internal/llm/anthropic to register them)",
			cfg.Provider, strings.Join(r.names(), ", "))
	}
	return f(cfg)
}

// New builds the provider a workflow's llm: entry describes. Fields left
// empty fall back on the environment, read through getenv (nil:
// os.LookupEnv):
//
//   - provider: SKEIN_LLM_PROVIDER, else anthropic for a model named
//     claude-*, else openai;
//   - model: SKEIN_LLM_MODEL, else DefaultOpenAIModel for an openai entry
//     with an API key and no base_url (OpenAI's own API);
//   - base_url: SKEIN_LLM_BASE_URL;
//   - api_key: SKEIN_LLM_API_KEY, else OPENAI_API_KEY or ANTHROPIC_API_KEY
//     by provider.
//
// The SKEIN_LLM_* variables describe one endpoint: they apply to an entry
// whose provider is unset or the same as SKEIN_LLM_PROVIDER's. An entry
// without a model is an error; so is one without an API key that talks to
// the vendor's own endpoint (a custom base_url, such as a local Ollama, may
// need none).
func New(cfg workflow.LLMConfig, getenv func(string) (string, bool)) (Provider, error) {
	c, err := Resolve(cfg, getenv)
	if err != nil {
		return nil, err
	}
	return Open(c)
}

// Resolve applies New's fallbacks and checks without building a provider.
func Resolve(cfg workflow.LLMConfig, getenv func(string) (string, bool)) (Config, error) {
	if getenv == nil {
		getenv = os.LookupEnv
	}
	env := func(k string) string {
		v, _ := getenv(k)
		return strings.TrimSpace(v)
	}
	name := cfg.Name
	if name == "" {
		name = "default"
	}
	c := Config{
		Name:        name,
		Provider:    strings.ToLower(strings.TrimSpace(cfg.Provider)),
		Model:       strings.TrimSpace(cfg.Model),
		BaseURL:     strings.TrimSpace(cfg.BaseURL),
		APIKey:      strings.TrimSpace(cfg.APIKey),
		Temperature: cfg.Temperature,
		MaxTokens:   cfg.MaxTokens,
		NoStream:    cfg.Stream != nil && !*cfg.Stream,
	}
	if len(cfg.Headers) > 0 {
		c.Headers = make(map[string]string, len(cfg.Headers))
		for k, v := range cfg.Headers {
			c.Headers[k] = v
		}
	}
	envProvider := strings.ToLower(env(EnvProvider))
	skeinEnv := c.Provider == "" || envProvider == "" || envProvider == c.Provider
	if skeinEnv {
		if c.Provider == "" {
			c.Provider = envProvider
		}
		if c.Model == "" {
			c.Model = env(EnvModel)
		}
		if c.BaseURL == "" {
			c.BaseURL = env(EnvBaseURL)
		}
		if c.APIKey == "" {
			c.APIKey = env(EnvAPIKey)
		}
	}
	if c.Provider == "" {
		c.Provider = OpenAI
		if strings.HasPrefix(c.Model, "claude") {
			c.Provider = Anthropic
		}
	}
	if c.APIKey == "" {
		switch c.Provider {
		case OpenAI:
			c.APIKey = env(EnvOpenAI)
		case Anthropic:
			c.APIKey = env(EnvClaude)
		}
	}
	if c.Model == "" && c.Provider == OpenAI && c.BaseURL == "" && c.APIKey != "" {
		c.Model = DefaultOpenAIModel
	}
	if c.Model == "" {
		if c.Provider == OpenAI && c.BaseURL == "" {
			return Config{}, configErr(name, "no model: set model: in llm.%s or %s, or %s alone for OpenAI's %s", name, EnvModel, EnvOpenAI, DefaultOpenAIModel)
		}
		return Config{}, configErr(name, "no model: set model: in llm.%s or %s", name, EnvModel)
	}
	if c.BaseURL != "" {
		u, err := url.Parse(c.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return Config{}, configErr(name, "base_url %q is not an http(s) URL", c.BaseURL)
		}
	}
	if c.APIKey == "" && vendorEndpoint(c.BaseURL) {
		keyVar := EnvAPIKey
		switch c.Provider {
		case OpenAI:
			keyVar = EnvOpenAI + " or " + EnvAPIKey
		case Anthropic:
			keyVar = EnvClaude + " or " + EnvAPIKey
		}
		return Config{}, configErr(name, "no API key for %s: set api_key: in llm.%s or %s", c.Provider, name, keyVar)
	}
	return c, nil
}

// vendorEndpoint reports whether base is a vendor's hosted API (which
// always needs a key) rather than a self-hosted one.
func vendorEndpoint(base string) bool {
	if base == "" {
		return true
	}
	u, err := url.Parse(base)
	if err != nil {
		return true
	}
	h := u.Hostname()
	return h == "api.openai.com" || h == "api.anthropic.com"
}

func configErr(name, format string, args ...any) *node.Error {
	e := node.Failf(categoryValidation, "llm_config", "llm %q: "+format, append([]any{name}, args...)...)
	e.Permanent = true
	return e
}
