package server

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/internal/blob"
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

// artifactURL is where GET serves a node's artifact, each part escaped:
// a file name may hold '#', '?', '%' or spaces.
func artifactURL(runID, node, name string) string {
	return "/api/runs/" + url.PathEscape(runID) + "/artifacts/" + url.PathEscape(node) + "/" + url.PathEscape(name)
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
	// A queued run's, kept in the workers' blob store.
	kept := map[[2]string]bool{}
	for _, st := range doc.Steps {
		for _, a := range st.Artifacts {
			if kept[[2]string{st.Node, a.Name}] {
				continue
			}
			kept[[2]string{st.Node, a.Name}] = true
			out.Artifacts = append(out.Artifacts, ArtifactDoc{Node: st.Node, Name: a.Name, Size: a.Size, ContentType: artifactType(a.Name),
				URL: artifactURL(doc.ExecutionID, st.Node, a.Name)})
		}
	}
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
			if err != nil || !info.Mode().IsRegular() || kept[[2]string{st.Node, e.Name()}] {
				continue
			}
			out.Artifacts = append(out.Artifacts, ArtifactDoc{Node: st.Node, Name: e.Name(), Size: info.Size(), ContentType: artifactType(e.Name()),
				URL: artifactURL(doc.ExecutionID, st.Node, e.Name())})
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
// downloads. A queued run's come from the workers' blob store; a local
// run's are opened through its folder's os.Root, so no name leads out of
// it (runner.Artifact).
func (s *Server) getArtifact(w http.ResponseWriter, r *http.Request) error {
	node, name := r.PathValue("node"), r.PathValue("name")
	if node == "" || name == "" || strings.ContainsAny(node+name, `/\`) || node == ".." || name == ".." || node == "." || name == "." {
		return problemf(http.StatusBadRequest, CodeBadRequest, "an artifact is named by its node and its file name")
	}
	rc, size, err := s.cfg.Runner.Artifact(r.Context(), r.PathValue("id"), node, name)
	if err != nil {
		return err
	}
	defer rc.Close()
	h := w.Header()
	ct := artifactType(name)
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	if ct == "application/octet-stream" {
		h.Set("Content-Disposition", mime.FormatMediaType("attachment", map[string]string{"filename": name}))
	}
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, rc) // the client went away, or the store failed mid-way: the length tells
	return nil
}

// getBlob answers with a big value of the run: the content of a blob the
// run's document refers to (an input, a step's parameter or output, the
// run's outputs), as text or JSON, wherever the run's configuration keeps
// it (its folder, a shared folder, the database).
func (s *Server) getBlob(w http.ResponseWriter, r *http.Request) error {
	sum := r.PathValue("sha256")
	doc, err := s.cfg.Runner.Get(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	found := doc.Blob(sum)
	if found == nil {
		return problemf(http.StatusNotFound, CodeNotFound, "run %s holds no big value %q; its document names the ones it holds by their sha256", doc.ExecutionID, sum)
	}
	rc, err := found.Open()
	if err != nil {
		return fmt.Errorf("run %s: %w", doc.ExecutionID, err)
	}
	defer rc.Close()
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	if found.Type() == blob.JSON {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.FormatInt(found.Size(), 10))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'")
	w.WriteHeader(http.StatusOK)
	_, _ = io.Copy(w, rc) // the client went away, or the store failed mid-way: the length tells
	return nil
}
