package durable

import (
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// Cancelled returns the steps that cancelling a run nobody runs records,
// as the scheduler's cancel does in a running one: its waiting steps
// cancelled at now, its running steps too (their process is gone: the
// run is interrupted), its pending steps cancelled (they never started), and
// every node of p, the run's plan, outside loop bodies, reachable from
// where it started and without a step yet (a run recorded before steps
// were planned), cancelled too (none without a plan).
func Cancelled(p *engine.Plan, run *store.Run, steps []*store.Step, now time.Time) []*store.Step {
	var out []*store.Step
	for _, s := range steps {
		if s.Status == engine.StatusWaiting || s.Status == engine.StatusRunning {
			c := *s
			c.Status, c.FinishedAt, c.Output = engine.StatusCancelled, &now, nil
			c.Error = &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled while the step waited"}
			if s.Status == engine.StatusRunning {
				c.Error.Message = "the run was cancelled after the process that ran the step stopped"
			}
			out = append(out, &c)
		}
		if s.Status == engine.StatusPending {
			c := *s
			c.Status = engine.StatusCancelled
			out = append(out, &c)
		}
	}
	if p == nil {
		return out
	}
	starts, err := p.StartNodes(run.Trigger)
	if err != nil {
		return out
	}
	has := map[string]bool{}
	order, gen := 0, 1
	for _, s := range steps {
		has[s.Node] = true
		order, gen = max(order, s.StepOrder), max(gen, s.Generation)
	}
	reach := p.G.Reachable(starts)
	for i, pn := range p.Nodes {
		if !reach[i] || pn.Home >= 0 || has[pn.ID] {
			continue
		}
		order++
		out = append(out, &store.Step{RunID: run.ID, Generation: gen, StepOrder: order, Node: pn.ID, Type: pn.Type,
			Visit: 1, Status: engine.StatusCancelled})
	}
	return out
}
