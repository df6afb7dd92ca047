package server

import (
	"errors"
	"net/http"
	"path/filepath"

	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/workflow"
	"github.com/skeinhq/skein/workflow/edit"
)

// EditBody is the body of POST /api/workflows/edit: a workflow's text, the
// file it is checked as (a name in --workflows, as ?file= of validate) and
// the graph editor's edits to apply to it, in order.
type EditBody struct {
	File   string    `json:"file"`
	Source string    `json:"source"`
	Ops    []edit.Op `json:"ops"`
}

// EditResult is the answer of POST /api/workflows/edit: the edited text and
// its validation, as POST /api/workflows/validate gives it.
type EditResult struct {
	Source string `json:"source"`
	ValidateResult
}

// editWorkflow applies the editor's edits to a workflow's text, changing
// only the bytes the edits touch (comments, key order, quoting and layout
// of the rest stay), and answers the new text with its validation. It
// writes nothing: the editor saves with PUT …/source. An edit that cannot
// be applied (an unknown node, a bad path, an id taken) is 422 bad_edit
// naming the edit.
func (s *Server) editWorkflow(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(w, r, editBodyLimit)
	if err != nil {
		return err
	}
	var body EditBody
	if err := reqbody.DecodeJSON(raw, &body, true); err != nil {
		return err
	}
	if err := reqbody.CheckUTF8("the workflow text", []byte(body.Source)); err != nil {
		return err
	}
	name := body.File
	if name == "" {
		name = "inline.yaml"
	}
	if err := checkFileName(name); err != nil {
		return err
	}
	dir, err := s.workflowsDir()
	if err != nil {
		return err
	}
	out, err := edit.Apply([]byte(body.Source), name, body.Ops)
	if err != nil {
		var opErr *edit.OpError
		if errors.As(err, &opErr) {
			return problemf(http.StatusUnprocessableEntity, CodeBadEdit, "%v", opErr)
		}
		return problemf(http.StatusUnprocessableEntity, CodeBadEdit, "%v", err)
	}
	wf, ds := workflow.LoadSource(filepath.Join(dir, name), out, s.registry())
	writeJSON(w, http.StatusOK, EditResult{Source: string(out),
		ValidateResult: ValidateResult{Valid: !ds.HasErrors(), Diagnostics: s.relDiagnostics(ds, dir), Nodes: draftNodes(wf, s.registry())}})
	return nil
}
