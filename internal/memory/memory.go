// Package memory is the seam between the AI kinds' memory: parameter and
// where a host keeps conversation threads: the Store interface the llm and
// agent kinds recall from and remember into, the Step that names who asks,
// and the Service under which a run's Store is found. The runner provides
// one kept in the run's store.
package memory

import (
	"context"

	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
)

// Store keeps the messages of conversation threads for the memory:
// parameter of llm and agent nodes.
type Store interface {
	// Recall returns the last limit messages of a thread, oldest first,
	// without those step kept itself (a step run again does not see its
	// own earlier exchange).
	Recall(ctx context.Context, thread string, step Step, limit int) ([]llm.Message, error)
	// Remember keeps msgs in a thread, in place of what step kept there
	// before.
	Remember(ctx context.Context, thread string, step Step, msgs []llm.Message) error
}

// Step names the step that recalls or remembers: its run and node/visit.
type Step struct {
	RunID string
	Step  string
}

// Service is the service under which the AI kinds find the run's memory.
var Service = node.NewService[Store]("conversation memory (memory:)")

// DefaultMaxMessages is how many messages of a thread memory: recalls when
// it sets no max_messages.
const DefaultMaxMessages = 20
