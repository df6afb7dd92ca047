package registry_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/workflow"
)

// Every goroutine a test starts (fake model servers and the providers'
// connections to them) ends with the test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noEnv hides the process environment from model resolution: SKEIN_LLM_*
// set on the machine must not redirect a test's calls.
func noEnv(string) (string, bool) { return "", false }

// models resolves the named model configs, each pointing at a fake server.
func models(servers map[string]*llmtest.Server, flavor llmtest.Flavor) *registry.Models {
	w := &workflow.Workflow{Name: "t"}
	for _, name := range []string{"default", "vision", "judge"} {
		srv, ok := servers[name]
		if !ok {
			continue
		}
		model := "gpt-4.1-mini"
		if flavor == llmtest.Anthropic {
			model = "claude-haiku-4-5"
		}
		w.LLM = append(w.LLM, &workflow.LLMConfig{
			Name: name, Provider: string(flavor), Model: model, BaseURL: srv.BaseURL(), APIKey: "test-key",
		})
	}
	return registry.New(w, noEnv)
}
