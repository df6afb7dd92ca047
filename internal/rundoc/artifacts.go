package rundoc

import (
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
