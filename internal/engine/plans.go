package engine

import (
	"sync"

	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Plans keeps the plans of the workflows a process runs. A plan does not
// change once made, so the runs of one loaded workflow (a served one)
// share it. The zero value is ready to use; it is safe for concurrent use.
type Plans struct {
	mu    sync.Mutex
	plans map[*workflow.Workflow]*Plan
}

// maxPlans bounds the plans a Plans keeps.
const maxPlans = 256

// Get returns the plan of w, made with reg the first time.
func (ps *Plans) Get(w *workflow.Workflow, reg *node.Registry) (*Plan, error) {
	ps.mu.Lock()
	p, ok := ps.plans[w]
	ps.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := NewPlan(w, reg)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if len(ps.plans) >= maxPlans {
		clear(ps.plans) // the workflows of a long-lived server were reloaded
	}
	if ps.plans == nil {
		ps.plans = map[*workflow.Workflow]*Plan{}
	}
	ps.plans[w] = p
	return p, nil
}
