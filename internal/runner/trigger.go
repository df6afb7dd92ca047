package runner

import (
	"context"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// triggerPayload reads back what a run's trigger fired with — a webhook's
// request, a chat message — from the trigger's recorded step, so a resume
// or a rerun sees the same `trigger` as the first execution. It is nil
// for a run started by hand (a trigger that starts by default outputs the
// run's inputs, which the job has anyway) and when nothing was recorded.
func (r *Runner) triggerPayload(hist []*store.Step, trigger string) map[string]any {
	if trigger == "" {
		return nil
	}
	for _, s := range hist {
		if s.Node != trigger || s.Status != engine.StatusSuccess || s.Masked {
			continue
		}
		if spec, ok := r.cfg.Registry.Lookup(s.Type); !ok || spec.StartsByDefault {
			return nil
		}
		out, _, err := durable.Output(s)
		if err != nil || out == nil {
			return nil
		}
		payload := make(map[string]any, len(out))
		for k, v := range out {
			if k != "success" && k != "error" {
				payload[k] = v
			}
		}
		return payload
	}
	return nil
}

// Secrets returns the values of the secrets a workflow declares, read as
// a run reads them (SKEIN_SECRET_<NAME>, <NAME>, then the secrets file):
// for a front end that checks a request against a secret of the workflow
// (a webhook's signing secret) before any run starts.
func (r *Runner) Secrets(w *workflow.Workflow, secretsFile string) (map[string]string, error) {
	return resolveSecrets(w, r.cfg.LookupEnv, secretsFile)
}

// Lookup returns a stored run without its steps, with its status as people
// should see it (Runner.Status): a cheaper Get, to learn whether a run
// exists and how it stands. ErrNotFound when there is none.
func (r *Runner) Lookup(ctx context.Context, id string) (*store.Run, error) {
	run, err := r.run(ctx, id)
	if err != nil {
		return nil, err
	}
	run.Status = r.Status(run)
	return run, nil
}
