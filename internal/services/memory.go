package services

import (
	"context"

	"github.com/skeinhq/skein/internal/cassette"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/memory"
	"github.com/skeinhq/skein/internal/store"
)

// Memory is the memory of the llm and agent nodes of one run of a
// workflow, kept in the run's store.
type Memory struct {
	Store    store.Store
	Workflow string
	// Replaces is the run this run re-runs: its steps' turns are replaced
	// by this run's, not added to.
	Replaces string
}

var _ memory.Store = Memory{}

func (m Memory) source(step memory.Step) store.MemorySource {
	return store.MemorySource{RunID: step.RunID, Step: step.Step, Replaces: m.Replaces}
}

// Recall returns the thread's last messages.
func (m Memory) Recall(ctx context.Context, thread string, step memory.Step, limit int) ([]llm.Message, error) {
	kept, err := m.Store.Memory(ctx, m.Workflow, thread, limit, m.source(step))
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
func (m Memory) Remember(ctx context.Context, thread string, step memory.Step, msgs []llm.Message) error {
	kept := make([]*store.MemoryMessage, 0, len(msgs))
	for _, msg := range msgs {
		kept = append(kept, &store.MemoryMessage{Role: msg.Role, Content: msg.Content})
	}
	return m.Store.ReplaceMemory(ctx, m.Workflow, thread, m.source(step), kept)
}

// KindMemory is the cassette kind of what a step recalled from memory.
const KindMemory = "memory"

// tapeMemory is a run's memory under a cassette tape: what a step
// recalls is an interaction like a model call — recorded, and answered
// from the cassette on a replay, which remembers nothing (the thread as
// the recorded run left it is the thread).
type tapeMemory struct {
	mem  memory.Store
	tape *cassette.Tape
}

// Taped is mem under tape (mem itself when tape is nil).
func Taped(mem memory.Store, tape *cassette.Tape) memory.Store {
	if tape == nil {
		return mem
	}
	return tapeMemory{mem: mem, tape: tape}
}

// recallRequest is what identifies a recall in the cassette.
type recallRequest struct {
	Thread string `json:"thread"`
	Limit  int    `json:"limit"`
}

func (m tapeMemory) Recall(ctx context.Context, thread string, step memory.Step, limit int) ([]llm.Message, error) {
	return cassette.Do(ctx, m.tape, KindMemory, recallRequest{Thread: thread, Limit: limit}, func(ctx context.Context) ([]llm.Message, error) {
		return m.mem.Recall(ctx, thread, step, limit)
	})
}

func (m tapeMemory) Remember(ctx context.Context, thread string, step memory.Step, msgs []llm.Message) error {
	if m.tape.Replaying() {
		return nil
	}
	return m.mem.Remember(ctx, thread, step, msgs)
}
