package server

import (
	"errors"
	"io/fs"
	"mime"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// ArtifactDoc is a file a node of a run saved: <run folder>/<node>/artifacts/<name>.
type ArtifactDoc struct {
	Node string `json:"node"`
	Name string `json:"name"`
	Size int64  `json:"size"`
	// ContentType is how GET …/artifacts/{node}/{name} serves it: an image
	// type (shown in the page), else application/octet-stream (downloaded).
	ContentType string `json:"content_type"`
	URL         string `json:"url"`
}

// inlineTypes are the artifact types served as themselves; everything
// else (HTML and SVG too, which could run scripts) is a download.
var inlineTypes = map[string]string{".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif", ".webp": "image/webp"}

func artifactType(name string) string {
	if t, ok := inlineTypes[strings.ToLower(path.Ext(name))]; ok {
		return t
	}
	return "application/octet-stream"
}

// listArtifacts lists the files the run's nodes saved in their artifacts
// folders, by node and name. A run without a folder has none.
func (s *Server) listArtifacts(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.cfg.Runner.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	out := struct {
		Artifacts []ArtifactDoc `json:"artifacts"`
	}{Artifacts: []ArtifactDoc{}}
	if doc.Dir == "" {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	root, err := os.OpenRoot(doc.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		writeJSON(w, http.StatusOK, out)
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	seen := map[string]bool{}
	for _, st := range doc.Steps {
		if seen[st.Node] {
			continue
		}
		seen[st.Node] = true
		ents, err := fs.ReadDir(root.FS(), path.Join(st.Node, "artifacts"))
		if err != nil {
			continue // no artifacts folder: nothing saved
		}
		for _, e := range ents {
			info, err := e.Info()
			if err != nil || !info.Mode().IsRegular() {
				continue
			}
			out.Artifacts = append(out.Artifacts, ArtifactDoc{Node: st.Node, Name: e.Name(), Size: info.Size(), ContentType: artifactType(e.Name()),
				URL: "/api/runs/" + doc.ExecutionID + "/artifacts/" + st.Node + "/" + e.Name()})
		}
	}
	sort.SliceStable(out.Artifacts, func(i, j int) bool {
		a, b := out.Artifacts[i], out.Artifacts[j]
		return a.Node < b.Node || a.Node == b.Node && a.Name < b.Name
	})
	writeJSON(w, http.StatusOK, out)
	return nil
}

// getArtifact serves one artifact: images as themselves, other files as
// downloads. The file is opened through the run folder's os.Root, so no
// name leads out of it.
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) error {
	node, name := r.PathValue("node"), r.PathValue("name")
	if node == "" || name == "" || strings.ContainsAny(node+name, `/\`) || node == ".." || name == ".." || node == "." || name == "." {
		return problemf(http.StatusBadRequest, CodeBadRequest, "an artifact is named by its node and its file name")
	}
	doc, err := s.cfg.Runner.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	notFound := problemf(http.StatusNotFound, CodeNotFound, "run %s has no artifact %s of node %s", doc.ExecutionID, name, node)
	if doc.Dir == "" {
		return notFound
	}
	root, err := os.OpenRoot(doc.Dir)
	if err != nil {
		return notFound
	}
	defer root.Close()
	f, err := root.Open(filepath.Join(node, "artifacts", name))
	if err != nil {
		return notFound
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() {
		return notFound
	}
	h := w.Header()
	ct := artifactType(name)
	h.Set("Content-Type", ct)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if ct == "application/octet-stream" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	}
	http.ServeContent(w, r, name, info.ModTime(), f)
	return nil
}
