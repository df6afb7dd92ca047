package durable

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"

	"golang.org/x/sync/singleflight"

	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// Versions stores the source of the workflows new runs execute as their
// latest versions (unchanged sources are not stored twice). A workflow run
// many times — a served one, loaded once per change of its file — is read
// and saved on its first run only, however many runs of it start at once:
// the webhooks a server takes in its first moments wait for one save
// instead of each saving its own, one after the other behind the
// workflow's lock (see BENCHMARKS.md). The zero value is ready to use.
type Versions struct {
	saved  sync.Map // *workflow.Workflow → its stored version
	latest sync.Map // name → the savedVersion this Versions saved last
	saving singleflight.Group
}

// Save stores w's source in st, once per loaded workflow, and returns its
// version: the text w was decoded from (workflow.Workflow.Source), else
// its file's. A save under way for the same source is waited for, not
// made again; it is not stopped by ctx, whose caller is one of several.
func (vs *Versions) Save(ctx context.Context, st store.Store, w *workflow.Workflow) (int, error) {
	if v, ok := vs.saved.Load(w); ok {
		return v.(int), nil
	}
	src := w.Source
	if src == nil {
		src, _ = workflow.ReadFile(w.File)
	}
	sum := sha256.Sum256(src)
	hash := hex.EncodeToString(sum[:])
	key := w.Name + "\x00" + hash
	v, err, _ := vs.saving.Do(key, func() (any, error) {
		if l, ok := vs.latest.Load(w.Name); ok && l.(savedVersion).hash == hash {
			return l.(savedVersion).version, nil // saved by a flight that ended as this one began, maybe for another copy
		}
		ver, err := st.SaveWorkflow(context.WithoutCancel(ctx), w.Name, src, hash)
		if err != nil {
			return 0, err
		}
		vs.latest.Store(w.Name, savedVersion{hash, ver.Version})
		return ver.Version, nil
	})
	if err != nil {
		return 0, err
	}
	vs.saved.Store(w, v) // w may be another copy of the flight's source
	return v.(int), nil
}

// savedVersion is a source's hash and the version it was stored as.
type savedVersion struct {
	hash    string
	version int
}
