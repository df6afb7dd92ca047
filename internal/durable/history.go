package durable

import (
	"context"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/proc"
	"github.com/skeinhq/skein/internal/store"
)

// Spent is what a run spent in its earlier executions: its recorded
// totals or, when an execution died before recording them, the sum of its
// recorded steps (hist) and of its child runs' spend, whichever is more.
func Spent(ctx context.Context, st store.Store, run *store.Run, hist []*store.Step) engine.Spent {
	return spent(ctx, st, run, hist, 0)
}

func spent(ctx context.Context, st store.Store, run *store.Run, hist []*store.Step, depth int) engine.Spent {
	var sum engine.Spent
	type ran struct {
		node, hash string
		visit      int
		finished   int64
	}
	seen := map[ran]bool{}
	for _, s := range hist {
		if s.Cached || s.Pinned {
			continue
		}
		if s.FinishedAt != nil && s.ConfigHash != "" {
			// A later execution that went on after a signal or timer
			// keeps the step as it was (engine.Reused.Kept): the same
			// step, spent once.
			k := ran{s.Node, s.ConfigHash, s.Visit, s.FinishedAt.UnixNano()}
			if seen[k] {
				continue
			}
			seen[k] = true
		}
		sum.Tokens += s.Tokens
		sum.CostUSD += s.CostUSD
	}
	if depth < engine.MaxDepth {
		kids, _ := st.ListRuns(ctx, store.RunFilter{Parent: run.ID})
		for _, kid := range kids {
			kh, err := st.StepHistory(ctx, kid.ID)
			if err != nil {
				continue
			}
			k := spent(ctx, st, kid, kh, depth+1)
			sum.Tokens += k.Tokens
			sum.CostUSD += k.CostUSD
		}
	}
	out := engine.Spent{Tokens: max(run.Tokens, sum.Tokens), CostUSD: max(run.CostUSD, sum.CostUSD)}
	return out
}

// KillOrphans stops the process groups that steps left running by a dead
// owner still have, before their nodes run again. Process groups are this
// host's: the caller passes only the history of a run last owned here.
// proc.KillGroup kills a group only if it has a process started since the
// step started, so a recycled group id of an unrelated process is spared.
func KillOrphans(hist []*store.Step) {
	for _, s := range hist {
		if s.ProcessGroup <= 0 || s.Status != engine.StatusRunning || s.StartedAt == nil {
			continue
		}
		_, _ = proc.KillGroup(s.ProcessGroup, *s.StartedAt)
	}
}
