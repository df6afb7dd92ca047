package durable

import (
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// TriggerPayload reads back what a run's trigger fired with — a webhook's
// request, a chat message — from the trigger's recorded step, so a resume
// or a rerun sees the same `trigger` as the first execution. It is nil
// for a run started by hand (a trigger that starts by default outputs the
// run's inputs, which the execution has anyway) and when nothing was recorded.
func TriggerPayload(reg *node.Registry, hist []*store.Step, trigger string) map[string]any {
	if trigger == "" {
		return nil
	}
	for _, s := range hist {
		if s.Node != trigger || s.Status != engine.StatusSuccess || s.Masked {
			continue
		}
		if spec, ok := reg.Lookup(s.Type); !ok || spec.StartsByDefault {
			return nil
		}
		out, _, err := Output(s)
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
