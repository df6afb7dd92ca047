package runner_test

import (
	"maps"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/runner"
)

const hooked = `version: 1
name: hooked
inputs:
  marker: {type: string, required: true}
nodes:
  - {id: manual, type: trigger.manual}
  - {id: hook, type: trigger.webhook, auth: {type: none}}
  - {id: greet, type: template, text: "hi {{ trigger.body.who }} / {{ hook.body.who }} via {{ hook.method }}"}
  - {id: gate, type: shell, command: [sh, -c, 'test -f "$M"'], env: {M: "{{ inputs.marker }}"}}
edges:
  - {from: hook, to: greet}
  - {from: manual, to: greet}
  - {from: greet, to: gate}
outputs:
  text: "{{ greet.text }}"
`

// TestPayloadSurvivesResumeAndRerun: a run started with a trigger payload
// sees it as trigger and as the trigger node's output, and so do its
// resume (which reuses the step that read it) and a rerun.
func TestPayloadSurvivesResumeAndRerun(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "hooked.yaml", hooked))
	require.NoError(t, err)
	marker := filepath.Join(b.dir, "marker")
	payload := map[string]any{"body": map[string]any{"who": "Ada"}, "method": "POST", "headers": map[string]any{}, "query": map[string]any{}}

	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: map[string]any{"marker": marker}, Trigger: "hook", Payload: payload})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status), "the gate fails while the marker is missing")

	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(again.Run.Status))
	require.Equal(t, "hi Ada / Ada via POST", again.Run.Outputs["text"])
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	for _, s := range doc.Steps {
		if s.Node == "greet" {
			require.True(t, s.Cached, "greet read the same payload, so it is reused")
		}
	}

	rerun, err := b.r.Rerun(b.ctx, runner.RerunRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(rerun.Run.Status))
	require.Equal(t, "hi Ada / Ada via POST", rerun.Run.Outputs["text"])
	require.Equal(t, "hook", rerun.Run.Trigger)
}

const byHand = `version: 1
name: by-hand
inputs:
  who: {type: string, required: true}
  marker: {type: string, required: true}
nodes:
  - {id: manual, type: trigger.manual}
  - {id: greet, type: set, values: {trigger: "{{ trigger }}", text: "hi {{ trigger.who }}"}}
  - {id: gate, type: shell, command: [sh, -c, 'test -f "$M"'], env: {M: "{{ inputs.marker }}"}}
edges:
  - {from: manual, to: greet}
  - {from: greet, to: gate}
outputs:
  text: "{{ greet.text }}"
`

// TestManualTriggerIsTheInputs: a run started by hand reads its inputs as
// trigger, as its trigger.manual node outputs them, and so does its
// resume.
func TestManualTriggerIsTheInputs(t *testing.T) {
	t.Parallel()
	b := setup(t)
	w, err := b.r.Load(b.write(t, "by-hand.yaml", byHand))
	require.NoError(t, err)
	marker := filepath.Join(b.dir, "marker")
	inputs := map[string]any{"who": "Ada", "marker": marker}
	res, err := b.r.Start(b.ctx, runner.StartRequest{Workflow: w, Inputs: inputs})
	require.NoError(t, err)
	require.Equal(t, "failed", string(res.Run.Status), "the gate fails while the marker is missing")
	doc, err := b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	outputs := map[string]map[string]any{}
	for _, s := range doc.Steps {
		outputs[s.Node] = s.Output
	}
	require.Equal(t, inputs, outputs["greet"]["trigger"], "trigger is the run's inputs")
	manual := maps.Clone(outputs["manual"])
	delete(manual, "success")
	require.Equal(t, manual, outputs["greet"]["trigger"], "trigger is what trigger.manual outputs")
	require.Equal(t, "hi Ada", outputs["greet"]["text"])

	require.NoError(t, os.WriteFile(marker, nil, 0o644))
	again, err := b.r.Resume(b.ctx, runner.ResumeRequest{RunID: res.Run.ID})
	require.NoError(t, err)
	require.Equal(t, "completed", string(again.Run.Status))
	require.Equal(t, "hi Ada", again.Run.Outputs["text"])
	doc, err = b.r.Get(b.ctx, res.Run.ID)
	require.NoError(t, err)
	for _, s := range doc.Steps {
		if s.Node == "greet" {
			require.True(t, s.Cached, "greet read the same trigger on resume, so it is reused")
		}
	}
}
