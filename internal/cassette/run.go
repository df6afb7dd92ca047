package cassette

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/internal/llm"
)

// modelEnv are the model settings a cassette keeps (Header.Env).
var modelEnv = []string{llm.EnvProvider, llm.EnvModel, llm.EnvBaseURL}

// NewRunRecorder is the recorder of a run of workflow: its header keeps
// the model settings of the environment (masked), for a replay to use the
// same models.
func NewRunRecorder(workflow, runID string, started time.Time, getenv func(string) (string, bool), mask func(string) string) *Tape {
	mask = orIdentity(mask)
	h := Header{Workflow: workflow, RunID: runID, StartedAt: started}
	for _, k := range modelEnv {
		if v, ok := getenv(k); ok {
			if h.Env == nil {
				h.Env = map[string]string{}
			}
			h.Env[k] = mask(v)
		}
	}
	return NewRecorder(h, mask)
}

// Save writes a run's cassette in its folder dir and, when a replay of
// the cassette file replayed (none: "") added interactions (AllowNew),
// appends them to that file too.
func Save(t *Tape, dir, replayed string) error {
	c := t.Cassette()
	if err := c.Write(filepath.Join(dir, FileName)); err != nil {
		return fmt.Errorf("writing the run's cassette: %w", err)
	}
	if replayed != "" && t.Added() > 0 {
		if err := c.Write(replayed); err != nil {
			return fmt.Errorf("appending the new interactions to %s: %w", replayed, err)
		}
	}
	return nil
}
