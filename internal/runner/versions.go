package runner

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/skeinhq/skein/workflow"
)

// saveWorkflow stores the source of the workflow a new run executes as its
// latest version (unchanged sources are not stored twice) and returns the
// version. A workflow run many times — a served one, loaded once per
// change of its file — is read and saved on its first run only.
func (r *Runner) saveWorkflow(ctx context.Context, w *workflow.Workflow) (int, error) {
	if v, ok := r.versions.Load(w); ok {
		return v.(int), nil
	}
	src, _ := workflow.ReadFile(w.File)
	sum := sha256.Sum256(src)
	ver, err := r.st.SaveWorkflow(ctx, w.Name, src, hex.EncodeToString(sum[:]))
	if err != nil {
		return 0, err
	}
	r.versions.Store(w, ver.Version)
	return ver.Version, nil
}
