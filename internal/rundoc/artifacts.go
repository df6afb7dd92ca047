package rundoc

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/record"
)

// Artifact is a file a node saved, as the document lists it.
type Artifact = record.Artifact

// Artifacts lists the artifacts a queued step keeps in the blob store —
// its directive of artifacts (queue.ArtifactsKey), name to blob — by name,
// and returns their blobs by name.
func Artifacts(listed map[string]any) ([]Artifact, map[string]*blob.Blob) {
	if len(listed) == 0 {
		return nil, nil
	}
	docs := make([]Artifact, 0, len(listed))
	blobs := make(map[string]*blob.Blob, len(listed))
	for name, v := range listed {
		if b, ok := v.(*blob.Blob); ok {
			docs = append(docs, Artifact{Name: name, Size: b.Size(), SHA256: b.Digest()})
			blobs[name] = b
		}
	}
	sort.Slice(docs, func(i, j int) bool { return docs[i].Name < docs[j].Name })
	return docs, blobs
}

// ErrNoArtifact: the run's node saved no file of that name.
var ErrNoArtifact = errors.New("no such artifact")

// OpenArtifact opens a file the node nodeID of run saved: from the blob
// store for a queued run (whichever worker ran the node; the last visit
// that saved one of that name, of steps in step order), else from the
// node's artifacts folder in the run folder. name is a slash-separated
// path within that folder. artifacts reads what a step's directives list
// (Records.Output). It returns the file, its size, and ErrNoArtifact when
// there is none.
func OpenArtifact(run *record.Run, steps []*record.Step, nodeID, name string, artifacts func(*record.Step) map[string]any) (io.ReadCloser, int64, error) {
	missing := fmt.Errorf("run %s: node %s saved no artifact %q: %w", run.ID, nodeID, name, ErrNoArtifact)
	if !fs.ValidPath(name) || name == "." {
		return nil, 0, missing
	}
	var found *blob.Blob
	for _, s := range steps {
		if s.Node != nodeID {
			continue
		}
		if _, blobs := Artifacts(artifacts(s)); blobs[name] != nil {
			found = blobs[name] // the last visit wins
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
