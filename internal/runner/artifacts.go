package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/store"
)

// ErrNoArtifact: the run's node saved no file of that name.
var ErrNoArtifact = errors.New("no such artifact")

// ArtifactDoc is a file a node saved, as the run's document lists it.
type ArtifactDoc = record.Artifact

// stepArtifacts lists the artifacts a queued step keeps in the blob store
// (its queue.ArtifactsKey directive), by name.
func stepArtifacts(directives map[string]any) ([]ArtifactDoc, map[string]*blob.Blob) {
	m, _ := directives[queue.ArtifactsKey].(map[string]any)
	if len(m) == 0 {
		return nil, nil
	}
	docs := make([]ArtifactDoc, 0, len(m))
	blobs := make(map[string]*blob.Blob, len(m))
	for name, v := range m {
		if b, ok := v.(*blob.Blob); ok {
			docs = append(docs, ArtifactDoc{Name: name, Size: b.Size(), SHA256: b.Digest()})
			blobs[name] = b
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].Name < docs[j].Name })
	return docs, blobs
}

// Artifact opens a file the node nodeID of a run saved: from the blob
// store for a queued run (whichever worker ran the node; the last visit
// that saved one of that name), else from the node's artifacts folder in
// the run folder. name is a slash-separated path within that folder. It
// returns the file, its size, and ErrNoArtifact when there is none.
func (r *Runner) Artifact(ctx context.Context, runID, nodeID, name string) (io.ReadCloser, int64, error) {
	run, err := r.run(ctx, runID)
	if err != nil {
		return nil, 0, err
	}
	missing := fmt.Errorf("run %s: node %s saved no artifact %q: %w", run.ID, nodeID, name, ErrNoArtifact)
	if !fs.ValidPath(name) || name == "." {
		return nil, 0, missing
	}
	steps, err := r.st.Steps(ctx, run.ID)
	if err != nil {
		return nil, 0, err
	}
	var found *blob.Blob
	for _, s := range steps {
		if s.Node != nodeID {
			continue
		}
		if b := artifactOf(s, name); b != nil {
			found = b // steps are in step order: the last visit wins
		}
	}
	if found != nil {
		rc, err := found.Open()
		if err != nil {
			return nil, 0, fmt.Errorf("run %s: artifact %s of node %s: %w", run.ID, name, nodeID, err)
		}
		return rc, found.Size(), nil
	}
	if run.Dir == "" {
		return nil, 0, missing
	}
	// A local run: the file in the node's artifacts folder, read through
	// os.Root so that no name leads out of it.
	root, err := os.OpenRoot(filepath.Join(run.Dir, nodeID, "artifacts"))
	if err != nil {
		return nil, 0, missing
	}
	defer root.Close()
	f, err := root.Open(path.Clean(name))
	if err != nil {
		return nil, 0, missing
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		_ = f.Close()
		return nil, 0, missing
	}
	return f, fi.Size(), nil
}

// artifactOf returns the blob of the artifact name of a queued step.
func artifactOf(s *store.Step, name string) *blob.Blob {
	_, d, err := durable.Output(s)
	if err != nil {
		return nil
	}
	_, blobs := stepArtifacts(d)
	return blobs[name]
}
