package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// Versions stores the source of the workflows new runs execute as their
// latest versions (unchanged sources are not stored twice). A workflow run
// many times — a served one, loaded once per change of its file — is read
// and saved on its first run only. The zero value is ready to use.
type Versions struct {
	saved sync.Map // *workflow.Workflow → its stored version
}

// Save stores w's source in st, once per loaded workflow, and returns its
// version: the text w was decoded from (workflow.Workflow.Source), else
// its file's.
func (vs *Versions) Save(ctx context.Context, st store.Store, w *workflow.Workflow) (int, error) {
	if v, ok := vs.saved.Load(w); ok {
		return v.(int), nil
	}
	src := w.Source
	if src == nil {
		src, _ = workflow.ReadFile(w.File)
	}
	sum := sha256.Sum256(src)
	ver, err := st.SaveWorkflow(ctx, w.Name, src, hex.EncodeToString(sum[:]))
	if err != nil {
		return 0, err
	}
	vs.saved.Store(w, ver.Version)
	return ver.Version, nil
}
