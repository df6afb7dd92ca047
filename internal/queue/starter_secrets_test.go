package queue_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/workflow"
)

// A starter that knows one of a run's two secrets (a server whose
// environment has the webhook's token, not the API key only the workers
// have): the trigger's step it records is masked with the one it knows,
// and its history event is left open, so the workers, which know both,
// read it and run the run.
func TestAStarterThatKnowsSomeSecretsMasksWhatItRecords(t *testing.T) {
	t.Parallel()
	b := setup(t, 0)
	const token, key = "tok-9f8e7d6c5b", "key-1a2b3c4d5e"
	b.work(t, queue.Config{Queues: map[string]int{queue.DefaultQueue: 2}, Poll: 50 * time.Millisecond, FetchPoll: 50 * time.Millisecond,
		Secrets: func(*workflow.Workflow) (map[string]string, error) {
			return map[string]string{"TOKEN": token, "KEY": key}, nil
		}})
	b.starter, _ = queue.New(queue.Config{Store: b.st, Registry: b.reg,
		Secrets: func(*workflow.Workflow) (map[string]string, error) { return map[string]string{"TOKEN": token}, nil }})
	run := b.start(t, `version: 1
name: partly
secrets: [TOKEN, KEY]
inputs:
  said: {type: string}
nodes:
  - {id: start, type: trigger.manual}
  - {id: echo, type: set, values: {said: "{{ inputs.said }}", ok: "{{ inputs.said == secrets.TOKEN }}"}}
edges:
  - {from: start, to: echo}
outputs:
  ok: "{{ echo.ok }}"
`, map[string]any{"said": token})
	done := b.wait(t, run.ID)
	require.Equal(t, "completed", string(done.Status), "%v", done.Error)
	require.Equal(t, true, done.Outputs["ok"], "the workers read the trigger's payload as it was")
	steps := b.steps(t, run.ID)
	require.Equal(t, "***", steps["start"][0].Output["said"], "the starter masked the trigger's step")
	require.Equal(t, "***", steps["echo"][0].Output["said"], "the worker masked the node's step")
}
