package runner

import (
	"context"
	"io"

	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/store"
)

// ErrNoArtifact: the run's node saved no file of that name.
var ErrNoArtifact = rundoc.ErrNoArtifact

// Artifact opens a file the node nodeID of a run saved (rundoc.OpenArtifact):
// from the blob store for a queued run, else from the node's artifacts
// folder in the run folder. It returns the file, its size, and
// ErrNoArtifact when there is none.
func (r *Runner) Artifact(ctx context.Context, runID, nodeID, name string) (io.ReadCloser, int64, error) {
	run, err := r.run(ctx, runID)
	if err != nil {
		return nil, 0, err
	}
	steps, err := r.st.Steps(ctx, run.ID)
	if err != nil {
		return nil, 0, err
	}
	return rundoc.OpenArtifact(run, steps, nodeID, name, func(s *store.Step) map[string]any {
		_, artifacts := stepOutput(s)
		return artifacts
	})
}
