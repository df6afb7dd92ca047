package runner

import (
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/workflow"
)

// defaultJudge returns the judge of a workflow's checks: its judge model,
// else vision, else default, else the environment's (SKEIN_LLM_*). Its
// config's templates (api_key: "{{ secrets.KEY }}") render with the run's
// secrets, as the nodes' models do.
func defaultJudge(w *workflow.Workflow, lookupEnv func(string) (string, bool), secrets map[string]string) check.Judge {
	m := registry.New(w, lookupEnv)
	m.Render = secretRenderer(secrets)
	return &judge.LLM{Models: m}
}
