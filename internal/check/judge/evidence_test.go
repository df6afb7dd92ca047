package judge_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/check/judge"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm/llmtest"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Every goroutine a test starts (fake model servers and the providers'
// connections to them) ends with the test.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noEnv hides the process environment from model resolution: SKEIN_LLM_*
// set on the machine must not redirect a test's calls.
func noEnv(string) (string, bool) { return "", false }

// pngBytes starts like a PNG; the judge passes image bytes on untouched.
var pngBytes = []byte("\x89PNG\r\n\x1a\nnot-really-pixels")

// writeImage writes an image into dir and returns its path.
func writeImage(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, pngBytes, 0o644))
	return path
}

// evidence is a workflow folder, a run folder with one saved artifact,
// and a file outside both.
type evidence struct {
	run, artifact, outside string
	files                  *node.Files
}

func evidenceSetup(t *testing.T) *evidence {
	t.Helper()
	tmp := t.TempDir()
	flows := filepath.Join(tmp, "flows")
	r := &evidence{run: filepath.Join(tmp, "runs", "r1")}
	writeImage(t, filepath.Join(flows, "assets"), "logo.png")
	r.artifact = writeImage(t, filepath.Join(r.run, "shot", "artifacts"), "get-tiny-image-1.png")
	r.outside = writeImage(t, filepath.Join(tmp, "outside"), "secret.png")
	r.files = node.NewFiles(flows, "./assets", r.run)
	return r
}

// TestJudgeEvidenceReadableFolders checks that the judge reads evidence
// images through the run's policy: a screenshot in the run's folder is
// sent; a file there that is a symlink leading out is not, and the check
// ends as error saying why, with no call to the model.
func TestJudgeEvidenceReadableFolders(t *testing.T) {
	t.Parallel()
	w, ds := workflow.Decode("judge.yaml", []byte(`version: 1
name: judge
llm:
  judge: {provider: openai, model: gpt-4.1-mini, base_url: "BASE", api_key: test}
nodes:
  - id: page
    type: set
    values: {title: "Welcome"}
    expect: "a welcome page"
`))
	require.Empty(t, ds.Errors())
	for _, leak := range []bool{false, true} {
		name := "a screenshot in the run's folder"
		if leak {
			name = "a symlink in the run's folder that leads out"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := evidenceSetup(t)
			shot := r.artifact
			if leak {
				shot = filepath.Join(r.run, "page", "artifacts", "evidence-1.png")
				require.NoError(t, os.MkdirAll(filepath.Dir(shot), 0o755))
				require.NoError(t, os.Symlink(r.outside, shot))
			}
			srv := llmtest.NewServer(t, llmtest.OpenAI, llmtest.Script{
				llmtest.Reply(`{"verdicts": [{"check_name": "expect", "verdict": "pass", "reasoning": "welcome shown"}]}`),
			})
			cfg := *w.LLMConfig("judge")
			cfg.BaseURL = srv.BaseURL()
			wj := &workflow.Workflow{Name: "judge", LLM: []*workflow.LLMConfig{&cfg}}
			v := check.Evaluate(context.Background(), check.Input{
				Workflow: w, Judge: &judge.LLM{Models: registry.New(wj, noEnv)}, Files: r.files,
				Result: &engine.Result{Status: engine.RunCompleted, Steps: []*engine.StepRecord{
					{StepOrder: 1, Node: "page", Status: engine.StatusSuccess, Visit: 1, Output: map[string]any{"title": "Welcome"}},
				}},
				Images: func(string) []string { return []string{shot} },
			})
			got := v.Nodes[0].Checks[0]
			if !leak {
				require.Equal(t, check.Pass, got.Verdict, got.Reasoning)
				require.Equal(t, 1, srv.Calls())
				require.Len(t, srv.Last().Messages[0].Images, 1, "the screenshot is sent")
				require.Equal(t, pngBytes, srv.Last().Messages[0].Images[0].Data)
				return
			}
			require.Equal(t, check.Error, got.Verdict)
			require.Contains(t, got.Reasoning, "leads to "+r.outside)
			require.Zero(t, srv.Calls(), "nothing is sent to the judge")
		})
	}
}
