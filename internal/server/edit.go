package server

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/internal/schema"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The web editor's routes: a workflow file's text with its ETag, a save
// that never overwrites a change it did not see, a new file, and the node
// kinds' specs. Files are read and written through an os.Root of
// --workflows, so no name, symbolic link or `..` reaches outside it.

// SourceDoc is the answer of GET /api/workflows/{name}/source.
type SourceDoc struct {
	// Name is the workflow's name; File the file's path relative to
	// --workflows.
	Name        string `json:"name"`
	File        string `json:"file"`
	ContentType string `json:"content_type"`
	// ETag is the quoted SHA-256 of the file's bytes, for If-Match.
	ETag   string `json:"etag"`
	Source string `json:"source"`
	// Served is false for a file that does not validate; Diagnostics are
	// its problems (errors of a file not served, warnings of one served).
	Served      bool                  `json:"served"`
	Diagnostics []workflow.Diagnostic `json:"diagnostics"`
}

// SavedDoc is the answer of a save: PUT /api/workflows/{name}/source and
// POST /api/workflows.
type SavedDoc struct {
	Name string `json:"name"`
	File string `json:"file"`
	ETag string `json:"etag"`
	// Version is the stored version of the workflow the save made (runs
	// started from now on record it; earlier runs keep theirs).
	Version  int                   `json:"version"`
	Warnings []workflow.Diagnostic `json:"warnings"`
}

// SourceVersion is one side of an edit conflict.
type SourceVersion struct {
	ETag   string `json:"etag,omitempty"`
	Source string `json:"source"`
}

// CreateBody is the body of POST /api/workflows.
type CreateBody struct {
	// File is the new file's name in --workflows (name.yaml, name.yml or
	// name.json); by default the workflow's name with .yaml.
	File   string `json:"file"`
	Source string `json:"source"`
}

// KindsDoc is the answer of GET /api/kinds.
type KindsDoc struct {
	Kinds        []schema.Kind        `json:"kinds"`
	CommonFields []schema.CommonField `json:"common_fields"`
}

// ValidateNode is a node of a validated draft: the handles its out-edges
// may carry and the output ports it promises, as its kind computes them
// from its parameters (a switch's handles follow its cases).
type ValidateNode struct {
	ID      string   `json:"id"`
	Type    string   `json:"type"`
	Handles []string `json:"handles"`
	// Outputs is nil when the kind promises no ports (any may be
	// referenced).
	Outputs []string `json:"outputs"`
}

// editBodyLimit bounds a saved text: a workflow file's largest size, and
// room for a JSON body's quoting.
const editBodyLimit = 2*workflow.MaxFileSize + 1<<16

// etagOf is the entity tag of a file's bytes.
func etagOf(b []byte) string {
	sum := sha256.Sum256(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// contentTypeOf is the media type of a workflow file.
func contentTypeOf(file string) string {
	if strings.EqualFold(filepath.Ext(file), ".json") {
		return "application/json"
	}
	return "application/yaml"
}

// checkWorkflowName refuses a workflow name that could be read as a path.
func checkWorkflowName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\\\x00") ||
		strings.Contains(name, "..") || filepath.IsAbs(name) {
		return problemf(http.StatusBadRequest, CodeBadRequest, "%q is not a workflow name: a name has no /, \\, .. or NUL; GET /api/workflows lists them", name)
	}
	return nil
}

// checkFileName refuses a file name that is not a workflow file directly
// inside --workflows.
func checkFileName(file string) error {
	if file == "" || strings.ContainsAny(file, "/\\\x00") || strings.Contains(file, "..") || filepath.IsAbs(file) ||
		len(file) > 255 || !isWorkflowFile(file) {
		return problemf(http.StatusBadRequest, CodeBadRequest,
			"%q is not a workflow file name: name it like report.yaml (.yaml, .yml or .json, no folder, not hidden, no ..)", file)
	}
	return nil
}

// workflowsDir is --workflows as an absolute path.
func (s *Server) workflowsDir() (string, error) { return filepath.Abs(s.cfg.Workflows) }

// openWorkflows opens --workflows as a root: every file the editor reads
// or writes is reached through it.
func (s *Server) openWorkflows() (*os.Root, string, error) {
	dir, err := s.workflowsDir()
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(dir)
	return root, dir, err
}

// sourceFile returns the file of --workflows that holds workflow name:
// the served workflow's, or a file of that base name that does not
// validate (so that the editor can mend it).
func (s *Server) sourceFile(name string) (file string, served bool, err error) {
	if err := checkWorkflowName(name); err != nil {
		return "", false, err
	}
	c := s.Catalog()
	if e := c.Lookup(name); e != nil {
		return filepath.Base(e.File), true, nil
	}
	if p := c.problemFor(name); p != nil {
		return filepath.Base(p.File), false, nil
	}
	return "", false, problemf(http.StatusNotFound, CodeNotFound, "no workflow %q is served; GET /api/workflows lists them", name)
}

// readSource reads a file of --workflows through root: a regular file, or
// a symbolic link that stays inside (os.Root refuses the others).
func readSource(root *os.Root, file string) ([]byte, fs.FileInfo, error) {
	fi, err := root.Stat(file)
	if err != nil {
		return nil, nil, outsideProblem(file, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, nil, problemf(http.StatusBadRequest, CodeBadRequest, "%s is not a regular file", file)
	}
	if fi.Size() > workflow.MaxFileSize {
		return nil, nil, problemf(http.StatusUnprocessableEntity, CodeInvalidWorkflow, "%s is larger than a workflow file may be", file)
	}
	b, err := root.ReadFile(file)
	if err != nil {
		return nil, nil, outsideProblem(file, err)
	}
	return b, fi, nil
}

// outsideProblem is the problem of a file the root would not open.
func outsideProblem(file string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return problemf(http.StatusNotFound, CodeNotFound, "%s is not in the workflows folder any more", file)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "escapes") {
		return problemf(http.StatusBadRequest, CodeBadRequest, "%s leads outside the workflows folder; only its own files are read and written", file)
	}
	return err
}

// relDiagnostics names the files of diagnostics relative to --workflows.
func (s *Server) relDiagnostics(ds workflow.Diagnostics, dir string) []workflow.Diagnostic {
	out := make([]workflow.Diagnostic, 0, len(ds))
	for _, d := range ds {
		if rel, err := filepath.Rel(dir, d.File); err == nil && !strings.HasPrefix(rel, "..") {
			d.File = rel
		}
		d.Message = strings.ReplaceAll(d.Message, dir+string(filepath.Separator), "")
		d.Message, _ = s.paths.Scrub(d.Message, "") // any other path of the server's (a child workflow's outside the folder)
		out = append(out, d)
	}
	return out
}

// getSource answers a workflow file's text and its ETag.
func (s *Server) getSource(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	file, served, err := s.sourceFile(name)
	if err != nil {
		return err
	}
	root, dir, err := s.openWorkflows()
	if err != nil {
		return err
	}
	defer root.Close()
	src, _, err := readSource(root, file)
	if err != nil {
		return err
	}
	doc := SourceDoc{Name: name, File: file, ContentType: contentTypeOf(file), ETag: etagOf(src), Source: string(src),
		Served: served, Diagnostics: []workflow.Diagnostic{}}
	if _, ds := workflow.LoadSource(filepath.Join(dir, file), src, s.registry()); len(ds) > 0 {
		doc.Diagnostics = s.relDiagnostics(ds, dir)
	}
	w.Header().Set("ETag", doc.ETag)
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// putSource saves a workflow file's new text: the whole text is the body,
// and If-Match the ETag of the version it was edited from. A file changed
// since is a 409 with both versions; an invalid text is a 422 and the file
// is not touched; else the text is written atomically, the catalog
// reloaded, and the text stored as the workflow's next version.
func (s *Server) putSource(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	if err := checkWorkflowName(name); err != nil {
		return err
	}
	match := strings.TrimSpace(r.Header.Get("If-Match"))
	if match == "" || match == "*" {
		return problemf(http.StatusPreconditionRequired, CodePreconditionRequired,
			"send If-Match with the ETag of the version you edited (GET /api/workflows/%s/source gives it), so that a save never overwrites a change it did not see", name)
	}
	body, err := readBody(w, r, editBodyLimit)
	if err != nil {
		return err
	}
	if err := reqbody.CheckUTF8("the workflow text", body); err != nil {
		return err
	}
	s.editMu.Lock()
	defer s.editMu.Unlock()
	file, _, err := s.sourceFile(name)
	if err != nil {
		return err
	}
	root, dir, err := s.openWorkflows()
	if err != nil {
		return err
	}
	defer root.Close()
	if lfi, err := root.Lstat(file); err == nil && lfi.Mode()&fs.ModeSymlink != 0 {
		return problemf(http.StatusBadRequest, CodeBadRequest, "%s is a symbolic link; the editor writes only regular files of the workflows folder", file)
	}
	cur, fi, err := readSource(root, file)
	if err != nil {
		return err
	}
	if tag := etagOf(cur); !etagMatches(match, tag) {
		p := problemf(http.StatusConflict, CodeEditConflict,
			"%s changed since the version you edited; merge your text (yours) with the file as it is now (theirs) and save again with If-Match %s", file, tag)
		p.Theirs = &SourceVersion{ETag: tag, Source: string(cur)}
		p.Yours = &SourceVersion{Source: string(body)}
		return p
	}
	saved, err := s.save(r, root, dir, file, body, fi.Mode().Perm(), false)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", saved.ETag)
	writeJSON(w, http.StatusOK, saved)
	return nil
}

// etagMatches compares If-Match's entity tags with tag, strongly (a weak
// tag matches nothing).
func etagMatches(ifMatch, tag string) bool {
	for _, t := range strings.Split(ifMatch, ",") {
		if strings.TrimSpace(t) == tag {
			return true
		}
	}
	return false
}

// createWorkflow writes a new workflow file into --workflows.
func (s *Server) createWorkflow(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(w, r, editBodyLimit)
	if err != nil {
		return err
	}
	var body CreateBody
	if err := reqbody.DecodeJSON(raw, &body, true); err != nil {
		return err
	}
	if strings.TrimSpace(body.Source) == "" {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the body needs source: the new workflow's text")
	}
	s.editMu.Lock()
	defer s.editMu.Unlock()
	root, dir, err := s.openWorkflows()
	if err != nil {
		return err
	}
	defer root.Close()
	file := body.File
	if file == "" { // named after the workflow's own name
		ext := ".yaml"
		if strings.HasPrefix(strings.TrimSpace(body.Source), "{") {
			ext = ".json"
		}
		wf, _ := workflow.Decode(filepath.Join(dir, "new"+ext), []byte(body.Source))
		if wf == nil || wf.Name == "" || checkWorkflowName(wf.Name) != nil {
			// Not a workflow with a name: say why, as a save would.
			_, ds := workflow.LoadSource(filepath.Join(dir, "new"+ext), []byte(body.Source), s.registry())
			p := problemf(http.StatusUnprocessableEntity, CodeInvalidWorkflow, "the new workflow is not valid; give it a name: to name its file by, or send file")
			p.Diagnostics = s.relDiagnostics(ds.Errors(), dir)
			return p
		}
		file = wf.Name + ext
	}
	if err := checkFileName(file); err != nil {
		return err
	}
	if _, err := root.Lstat(file); err == nil {
		return problemf(http.StatusConflict, CodeWorkflowExists, "%s exists in the workflows folder; change it with PUT /api/workflows/{name}/source", file)
	}
	saved, err := s.save(r, root, dir, file, []byte(body.Source), 0o644, true)
	if err != nil {
		return err
	}
	w.Header().Set("ETag", saved.ETag)
	w.Header().Set("Location", "/api/workflows/"+saved.Name+"/source")
	writeJSON(w, http.StatusCreated, saved)
	return nil
}

// save validates text as the file it will be, writes it, reloads the
// catalog and stores the workflow's version. The caller holds editMu.
func (s *Server) save(r *http.Request, root *os.Root, dir, file string, text []byte, mode fs.FileMode, create bool) (*SavedDoc, error) {
	abs := filepath.Join(dir, file)
	wf, ds := workflow.LoadSource(abs, text, s.registry())
	if wf == nil || ds.HasErrors() {
		p := problemf(http.StatusUnprocessableEntity, CodeInvalidWorkflow, "%s is not valid; nothing was written: %s",
			file, strings.ReplaceAll(ds.Error(), dir+string(filepath.Separator), ""))
		p.Diagnostics = s.relDiagnostics(ds.Errors(), dir)
		return nil, p
	}
	if other := s.Catalog().Lookup(wf.Name); other != nil && filepath.Base(other.File) != file {
		return nil, problemf(http.StatusConflict, CodeWorkflowExists,
			"workflow %s is served from %s; give each workflow its own name", wf.Name, filepath.Base(other.File))
	}
	if err := writeAtomic(root, file, text, mode, create); err != nil {
		if create && errors.Is(err, fs.ErrExist) {
			return nil, problemf(http.StatusConflict, CodeWorkflowExists, "%s exists in the workflows folder", file)
		}
		return nil, fmt.Errorf("writing %s: %w", abs, err)
	}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	v, err := s.cfg.Runner.SaveWorkflow(r.Context(), wf.Name, text)
	if err != nil {
		return nil, fmt.Errorf("storing version of %s: %w", wf.Name, err)
	}
	s.log.InfoContext(r.Context(), "workflow saved", "workflow", wf.Name, "file", file, "version", v, "created", create)
	return &SavedDoc{Name: wf.Name, File: file, ETag: etagOf(text), Version: v, Warnings: s.relDiagnostics(ds, dir)}, nil
}

// writeAtomic writes data to file through root: into a hidden temporary
// file of the same folder (which the catalog skips), synced, then renamed
// over file — or, with create, linked to it, which fails when file exists
// — so that a reader sees the old text or the new, never a part. The
// folder is synced after.
func writeAtomic(root *os.Root, file string, data []byte, mode fs.FileMode, create bool) error {
	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := "." + file + "." + hex.EncodeToString(rnd[:]) + ".tmp"
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	defer func() { _ = root.Remove(tmp) }() // gone after a rename; a link leaves it
	_, err = f.Write(data)
	if err == nil && !create {
		err = f.Chmod(mode) // the file's mode, whatever the umask
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if create {
		err = root.Link(tmp, file)
	} else {
		err = root.Rename(tmp, file)
	}
	if err != nil {
		return err
	}
	if d, err := root.Open("."); err == nil {
		_ = d.Sync() // the rename is durable once the folder is
		_ = d.Close()
	}
	return nil
}

// kinds answers every registered kind's spec.
func (s *Server) kinds(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, KindsDoc{Kinds: schema.Kinds(s.registry()), CommonFields: schema.CommonFields()})
	return nil
}

// draftNodes are the handles and ports of a draft's nodes.
func draftNodes(wf *workflow.Workflow, reg *node.Registry) []ValidateNode {
	out := []ValidateNode{}
	if wf == nil {
		return out
	}
	for _, n := range wf.Nodes {
		vn := ValidateNode{ID: n.ID, Type: n.Type, Handles: []string{}}
		if spec, ok := reg.Lookup(n.Type); ok {
			for _, h := range spec.AllHandles(n.Params) {
				onError := n.OnError
				if onError == "" {
					onError = wf.Defaults.OnError
				}
				if spec.Handles == nil && h == node.HandleError && onError != workflow.OnErrorRoute {
					continue // error is followed with on_error: route only
				}
				vn.Handles = append(vn.Handles, h)
			}
			vn.Outputs = spec.DeclaredOutputs(n.Params)
		}
		out = append(out, vn)
	}
	return out
}
