package services

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/memory"
	llmkind "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/internal/store/sqlite"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// An agent step that runs again — a resume after the process died between
// the model's answer and the step's record — keeps its turn once: its
// second run does not see its first turn as memory, and replaces it.
func TestMemoryOfAStepRunAgain(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "skein.db"))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, st.Close()) })
	require.NoError(t, st.CreateRun(ctx, &store.Run{ID: "r1", Workflow: "w", Status: "running", StartedAt: time.Now()}))

	srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{llmtest.Reply("first answer"), llmtest.Reply("second answer")})
	models := registry.New(&workflow.Workflow{Name: "w", LLM: []*workflow.LLMConfig{
		{Name: "default", Provider: "openai", Model: "gpt-4.1-mini", BaseURL: srv.BaseURL(), APIKey: "k"},
	}}, func(string) (string, bool) { return "", false })
	mem := Memory{Store: st, Workflow: "w"}
	services := node.BudgetService.Provide(nil, &engine.Budget{})
	services = registry.Service.Provide(services, models)
	services = memory.Service.Provide(services, mem)
	call := func() {
		t.Helper()
		_, err := llmkind.AgentKind{}.Run(ctx, &node.Call{
			RunID: "r1", NodeID: "answer", Visit: 1, Attempt: 1,
			Params:   map[string]any{"prompt": "hello", "memory": map[string]any{"thread": "t"}, "stream": false},
			Emit:     func(string, map[string]any) {},
			Redact:   func(s string) string { return s },
			Now:      time.Now,
			Services: services,
		})
		require.NoError(t, err)
	}
	call()
	call()
	require.Equal(t, []llm.Message{{Role: llm.RoleUser, Content: "hello"}}, srv.Requests()[1].Messages, "the step's own first turn is not its memory")
	kept, err := st.Memory(ctx, "w", "t", 0, store.MemorySource{})
	require.NoError(t, err)
	require.Len(t, kept, 2, "one turn, not two")
	require.Equal(t, "second answer", kept[1].Content)
}
