package repair_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// fakeRuns is the application layer as the loop sees it: each Execute
// answers with the next outcome of its script and keeps what it was asked.
type fakeRuns struct {
	asked   []repair.Execution
	results []*engine.Result
	billed  engine.Spent
	moved   string
	models  fakeModels
}

func (f *fakeRuns) Execute(_ context.Context, x repair.Execution) (*repair.Outcome, error) {
	f.asked = append(f.asked, x)
	res := f.results[len(f.asked)-1]
	if x.Finished != nil {
		x.Finished(res, time.Unix(0, 0))
	}
	return &repair.Outcome{RunID: "run-1", Status: res.Status, Engine: res, Spent: x.Spent}, nil
}

func (f *fakeRuns) Bill(_ context.Context, _ string, spent engine.Spent) bool {
	f.billed.Tokens += spent.Tokens
	return true
}

func (f *fakeRuns) Relocate(_ context.Context, _, file string) { f.moved = file }

func (f *fakeRuns) Secrets(*workflow.Workflow) map[string]string { return nil }

func (f *fakeRuns) Models(*workflow.Workflow, map[string]string) repair.Models { return f.models }

// fakeModels is a repair model that answers each request with the next
// workflow of its script.
type fakeModels struct{ replies *[]string }

func (m fakeModels) Get(string) (llm.Provider, string, error) { return m, "fixer", nil }

func (m fakeModels) Cost(string, llm.Usage) (float64, bool) { return 0, true }

func (m fakeModels) Unpriced(_, model, _ string) string { return model + " has no price" }

func (m fakeModels) Chat(context.Context, llm.Request) (*llm.Response, error) {
	if len(*m.replies) == 0 {
		return nil, errors.New("the script has no more replies")
	}
	next := (*m.replies)[0]
	*m.replies = (*m.replies)[1:]
	b, _ := json.Marshal(map[string]string{"workflow": next, "explanation": "fixed the key"})
	return &llm.Response{Text: string(b), Usage: llm.Usage{TotalTokens: 7}}, nil
}

const brokenFlow = `version: 1
name: fixme
nodes:
  - {id: a, type: set, values: {key: v}}
  - {id: b, type: set, values: {key: "{{ a.key.name }}"}}
edges:
  - {from: a, to: b}
`

// A run that fails with a template error is repaired: the model's
// workflow resumes the same run, and once it completes the file is
// replaced (the original kept as .backup) and the run's record points at
// it.
func TestRunRepairsAndResumes(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "fixme.yaml")
	require.NoError(t, os.WriteFile(file, []byte(brokenFlow), 0o644))
	fixed := strings.Replace(brokenFlow, "a.key.name", "a.key", 1)
	replies := []string{fixed}
	runs := &fakeRuns{models: fakeModels{replies: &replies}, results: []*engine.Result{
		{Status: engine.RunFailed, Steps: []*engine.StepRecord{
			{Node: "a", Type: "set", Status: engine.StatusSuccess, Visit: 1, Output: map[string]any{"key": "v"}},
			{Node: "b", Type: "set", Status: engine.StatusFailed, Visit: 1,
				Error: &node.Error{Category: node.CategoryTemplate, Code: "template", Message: "a.key.name: a.key is a string"}},
		}},
		{Status: engine.RunCompleted},
	}}
	var notes []string
	out, rep, err := repair.Run(t.Context(), repair.Request{
		Runs: runs, Registry: node.Default, File: file, Source: []byte(brokenFlow),
		Inputs: func(*workflow.Workflow) (map[string]any, error) { return map[string]any{}, nil },
		Note:   func(kind, text string) { notes = append(notes, kind+": "+text) },
	})
	require.NoError(t, err)
	require.Equal(t, engine.RunCompleted, out.Status, strings.Join(notes, "\n"))
	require.Len(t, runs.asked, 2)
	require.Empty(t, runs.asked[0].Resume, "the first execution is a new run")
	require.Equal(t, "run-1", runs.asked[1].Resume, "the repaired workflow goes on with the failed run")
	require.Equal(t, 7, runs.asked[1].Spent.Tokens, "what the repair model cost counts in the run")

	require.Equal(t, []string{`node b: values.key: "{{ a.key.name }}" → "{{ a.key }}"`}, rep.Changes)
	require.Equal(t, file, rep.File)
	require.Equal(t, file+".backup", rep.Backup)
	require.Equal(t, 7, rep.Tokens)
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, fixed, string(got))
	old, err := os.ReadFile(file + ".backup")
	require.NoError(t, err)
	require.Equal(t, brokenFlow, string(old))
	require.Equal(t, file, runs.moved)
	require.Contains(t, strings.Join(notes, "\n"), "repair: [repair] runtime attempt 1/3: node b: a.key.name: a.key is a string")
}

// A workflow the model leaves invalid is not run: the loop stops with
// ErrInvalid after its attempts, and the file is left as it was.
func TestRunStopsOnAWorkflowThatStaysInvalid(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bad.yaml")
	bad := "version: 1\nname: bad\nnodes:\n  - {id: a, type: nosuchkind}\n"
	require.NoError(t, os.WriteFile(file, []byte(bad), 0o644))
	replies := []string{strings.Replace(bad, "nosuchkind", "stillnokind", 1)}
	runs := &fakeRuns{models: fakeModels{replies: &replies}}
	var notes []string
	out, rep, err := repair.Run(t.Context(), repair.Request{
		Runs: runs, Registry: node.Default, File: file, Source: []byte(bad),
		Inputs: func(*workflow.Workflow) (map[string]any, error) { return nil, nil },
		Note:   func(kind, text string) { notes = append(notes, kind+": "+text) },
	})
	require.ErrorIs(t, err, repair.ErrInvalid)
	require.Nil(t, out)
	require.Nil(t, rep)
	require.Empty(t, runs.asked, "nothing ran")
	require.Contains(t, strings.Join(notes, "\n"), "auto-repair stopped: the repair model failed: the script has no more replies")
	// The model's text is told of as what it is: no file holds it.
	require.Contains(t, strings.Join(notes, "\n"), `the proposed repair:4:19: error: unknown node type "stillnokind"`)
	require.NoFileExists(t, strings.TrimSuffix(file, ".yaml")+".repaired.yaml")
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Equal(t, bad, string(got))
}
