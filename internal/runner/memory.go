package runner

import (
	"context"

	"github.com/skeinhq/skein/internal/llm"
	llmkind "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/internal/store"
)

// runMemory is the memory of the llm and agent nodes of one run of a
// workflow, kept in the run's store.
type runMemory struct {
	st       store.Store
	workflow string
	// replaces is the run this run re-runs: its steps' turns are replaced
	// by this run's, not added to.
	replaces string
}

var _ llmkind.Memory = runMemory{}

func (m runMemory) source(step llmkind.MemoryStep) store.MemorySource {
	return store.MemorySource{RunID: step.RunID, Step: step.Step, Replaces: m.replaces}
}

// Recall returns the thread's last messages.
func (m runMemory) Recall(ctx context.Context, thread string, step llmkind.MemoryStep, limit int) ([]llm.Message, error) {
	kept, err := m.st.Memory(ctx, m.workflow, thread, limit, m.source(step))
	if err != nil {
		return nil, err
	}
	out := make([]llm.Message, 0, len(kept))
	for _, k := range kept {
		out = append(out, llm.Message{Role: k.Role, Content: k.Content})
	}
	return out, nil
}

// Remember keeps a step's turn in the thread.
func (m runMemory) Remember(ctx context.Context, thread string, step llmkind.MemoryStep, msgs []llm.Message) error {
	kept := make([]*store.MemoryMessage, 0, len(msgs))
	for _, msg := range msgs {
		kept = append(kept, &store.MemoryMessage{Role: msg.Role, Content: msg.Content})
	}
	return m.st.ReplaceMemory(ctx, m.workflow, thread, m.source(step), kept)
}
