package server

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/internal/upstream"
	"github.com/skeinhq/skein/workflow"
)

// Trying a draft from the web editor: the text, saved or not, runs as the
// workflow file it edits, and the run stores that text as the version it
// ran. With a node, only that node runs: the nodes upstream of it are
// pinned to an earlier run's outputs (as `skein rerun --pin`), and
// nothing downstream of it runs.

// TryBody is the body of POST /api/workflows/{name}/try.
type TryBody struct {
	// Source is the draft's text.
	Source string `json:"source"`
	// Inputs and Trigger are a whole run's, as for POST
	// /api/workflows/{name}/runs.
	Inputs  map[string]any `json:"inputs"`
	Trigger string         `json:"trigger"`
	// Node, when set, is the one node to run; FromRun the earlier run of
	// the workflow whose outputs the nodes upstream of it reuse, and whose
	// inputs and trigger the run takes (default: the latest run with a
	// successful step of each of them).
	Node    string `json:"node"`
	FromRun string `json:"from_run"`
}

// pickRuns bounds how many of the latest runs are read to find one to
// pin from.
const pickRuns = 50

// tryWorkflow runs a draft of workflow name's file and answers 202 with
// the run, as startRun does.
func (s *Server) tryWorkflow(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("name")
	raw, err := readBody(w, r, editBodyLimit)
	if err != nil {
		return err
	}
	var body TryBody
	if err := reqbody.DecodeJSON(raw, &body, true); err != nil {
		return err
	}
	if strings.TrimSpace(body.Source) == "" {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the body needs source: the draft's text")
	}
	file, _, err := s.sourceFile(name)
	if err != nil {
		return err
	}
	dir, err := s.workflowsDir()
	if err != nil {
		return err
	}
	abs, src := filepath.Join(dir, file), []byte(body.Source)
	wf, ds := workflow.LoadSource(abs, src, s.registry())
	if wf == nil || ds.HasErrors() {
		p := problemf(http.StatusUnprocessableEntity, CodeInvalidWorkflow, "the draft of %s is not valid; nothing ran: %s",
			file, strings.ReplaceAll(ds.Error(), dir+string(filepath.Separator), ""))
		p.Diagnostics = s.relDiagnostics(ds.Errors(), dir)
		return p
	}
	ctx := withSource(r.Context(), SourceEditor)
	if body.Node == "" {
		if body.FromRun != "" {
			return problemf(http.StatusBadRequest, CodeBadRequest, "from_run goes with node: the node to run with its upstream pinned")
		}
		in, err := reqbody.Inputs(body.Inputs)
		if err != nil {
			return err
		}
		inputs, err := wf.ResolveInputs(in)
		if err != nil {
			return problemf(http.StatusBadRequest, CodeInvalidInputs, "%v", err)
		}
		run, err := s.launch(ctx, "draft run started", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
			return s.cfg.Runner.Start(ctx, runner.StartRequest{Workflow: wf, Inputs: inputs, Trigger: body.Trigger, Options: o})
		})
		if err != nil {
			return err
		}
		return s.accepted(w, r, run.ID)
	}
	if body.Inputs != nil || body.Trigger != "" {
		return problemf(http.StatusBadRequest, CodeBadRequest, "a node runs with the inputs and trigger of the run it pins from; send node and from_run only")
	}
	if wf.Node(body.Node) == nil {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the draft has no node %q", body.Node)
	}
	cut, needed, err := upstream.Cut(abs, src, s.registry(), body.Node)
	if err != nil {
		return problemf(http.StatusBadRequest, CodeBadRequest, "%s", strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
	}
	from, err := s.pinSource(r.Context(), wf.Name, body.Node, body.FromRun, needed)
	if err != nil {
		return err
	}
	run, err := s.launch(ctx, "draft node run started", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
		return s.cfg.Runner.Rerun(ctx, runner.RerunRequest{RunID: from, Workflow: cut, Pins: needed, Options: o})
	})
	if err != nil {
		return err
	}
	w.Header().Set("Skein-Pinned-From", from)
	return s.accepted(w, r, run.ID)
}

// pinSource returns the run whose outputs of the nodes needed (upstream of
// node) a node's run reuses: fromRun, checked, or the latest run of the
// workflow with a successful step of each.
func (s *Server) pinSource(ctx context.Context, workflowName, node, fromRun string, needed []string) (string, error) {
	if fromRun != "" {
		doc, err := s.cfg.Runner.Get(ctx, fromRun)
		if err != nil {
			return "", err
		}
		if doc.Workflow != workflowName {
			return "", problemf(http.StatusConflict, CodeNotPinnable, "run %s is a run of %s, not of %s; pin from a run of this workflow", doc.ExecutionID, doc.Workflow, workflowName)
		}
		if lack := lacking(doc.Steps, needed); len(lack) > 0 {
			return "", problemf(http.StatusConflict, CodeNotPinnable, "run %s has no successful step of %s, upstream of %s; pin from a run where %s succeeded",
				doc.ExecutionID, strings.Join(lack, ", "), node, plural(lack, "it", "they"))
		}
		return doc.ExecutionID, nil
	}
	runs, err := s.cfg.Runner.List(ctx, runner.ListRequest{Workflow: workflowName, Limit: pickRuns})
	if err != nil {
		return "", err
	}
	for _, run := range runs {
		if run.ParentID != "" || live(run.Status) {
			continue
		}
		doc, err := s.cfg.Runner.Get(ctx, run.ID)
		if errors.Is(err, runner.ErrNotFound) {
			continue // pruned meanwhile
		}
		if err != nil {
			return "", err
		}
		if len(lacking(doc.Steps, needed)) == 0 {
			return run.ID, nil
		}
	}
	return "", problemf(http.StatusConflict, CodeNotPinnable, "none of the latest %d runs of %s has a successful step of each node upstream of %s (%s); run the workflow first",
		pickRuns, workflowName, node, strings.Join(needed, ", "))
}

// lacking are the nodes of needed without a successful step in steps.
func lacking(steps []record.Step, needed []string) []string {
	ok := map[string]bool{}
	for _, st := range steps {
		if st.Status == record.StatusSuccess {
			ok[st.Node] = true
		}
	}
	var out []string
	for _, n := range needed {
		if !ok[n] {
			out = append(out, n)
		}
	}
	return out
}

func plural(list []string, one, many string) string {
	if len(list) == 1 {
		return one
	}
	return many
}
