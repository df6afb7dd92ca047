package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skeinhq/skein/docs"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/reqbody"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// maxBody bounds a request body (a workflow's text, a run's inputs).
const maxBody = 1 << 20

// healthz answers 200 while the process answers. It needs no token and
// says nothing else.
func (s *Server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz answers 200 when the server takes work: it is not shutting down
// and its store answers; else 503 not_ready. It needs no token (a probe
// carries no secret), so it says nothing but ready or not: why it is not
// ready goes to the log.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	notReady := problemf(http.StatusServiceUnavailable, CodeNotReady, "not ready")
	s.mu.Lock()
	stopping := s.stopping
	s.mu.Unlock()
	if stopping {
		return notReady
	}
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if _, err := s.cfg.Runner.List(ctx, runner.ListRequest{Limit: 1}); err != nil {
		s.log.WarnContext(r.Context(), "not ready: the store does not answer", "err", err)
		return notReady
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	return nil
}

// openAPI answers the API's OpenAPI document (docs/openapi.yaml).
func (s *Server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	w.Header().Set("Content-Type", "application/yaml")
	_, _ = w.Write(docs.OpenAPI) // a caller gone is no problem of ours
	return nil
}

// WorkflowDoc describes a served workflow.
type WorkflowDoc struct {
	Name        string       `json:"name"`
	Description string       `json:"description,omitempty"`
	File        string       `json:"file"`
	Inputs      []InputDoc   `json:"inputs"`
	Triggers    []TriggerDoc `json:"triggers"`
	// Source is the file's text, and Graph its nodes and edges (GET
	// /api/workflows/{name} only).
	Source   string                `json:"source,omitempty"`
	Graph    *GraphDoc             `json:"graph,omitempty"`
	Warnings []workflow.Diagnostic `json:"warnings,omitempty"`
}

// GraphDoc is a workflow's graph, as the web viewer draws it.
type GraphDoc struct {
	Nodes []GraphNode `json:"nodes"`
	Edges []GraphEdge `json:"edges"`
}

// GraphNode is a node of a workflow: its id, type, name and role (the
// kind's part in the graph: trigger, branch, loop…; "" for an action).
type GraphNode struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Name     string `json:"name,omitempty"`
	Role     string `json:"role,omitempty"`
	Disabled bool   `json:"disabled,omitempty"`
}

// GraphEdge is an edge: its handle (On; "" for the default one), and Back
// when it closes a loop (an endloop's jump, or any edge closing a cycle).
type GraphEdge struct {
	From string `json:"from"`
	To   string `json:"to"`
	On   string `json:"on,omitempty"`
	Back bool   `json:"back,omitempty"`
}

func (s *Server) graphDoc(w *workflow.Workflow) *GraphDoc {
	g := w.Graph()
	d := &GraphDoc{Nodes: make([]GraphNode, 0, len(g.Nodes)), Edges: make([]GraphEdge, 0, len(g.Edges))}
	for _, n := range g.Nodes {
		gn := GraphNode{ID: n.ID, Type: n.Type, Name: n.Name, Disabled: n.Disabled}
		if spec, ok := s.registry().Lookup(n.Type); ok {
			gn.Role = string(spec.Role)
		}
		d.Nodes = append(d.Nodes, gn)
	}
	for _, e := range g.Edges {
		d.Edges = append(d.Edges, GraphEdge{From: e.Edge.From, To: e.Edge.To, On: e.On, Back: e.Back})
	}
	return d
}

// InputDoc is a declared input of a workflow.
type InputDoc struct {
	Name        string `json:"name"`
	Type        string `json:"type"`
	Required    bool   `json:"required"`
	Default     any    `json:"default,omitempty"`
	Description string `json:"description,omitempty"`
	Enum        []any  `json:"enum,omitempty"`
}

// TriggerDoc is a trigger node of a workflow.
type TriggerDoc struct {
	ID   string `json:"id"`
	Type string `json:"type"`
}

func (s *Server) workflowDoc(e *Entry, withSource bool) WorkflowDoc {
	// The file by its name in the workflows folder, as the edit routes
	// name it: answers name no path of the server's.
	d := WorkflowDoc{Name: e.Name, Description: e.W.Description, File: filepath.Base(e.File), Inputs: []InputDoc{}, Triggers: []TriggerDoc{}}
	for _, in := range e.W.Inputs {
		d.Inputs = append(d.Inputs, InputDoc{Name: in.Name, Type: in.Type, Required: in.Required, Default: in.Default,
			Description: in.Description, Enum: in.Enum})
	}
	for _, n := range e.W.Nodes {
		if spec, ok := s.registry().Lookup(n.Type); ok && spec.Role == node.RoleTrigger {
			d.Triggers = append(d.Triggers, TriggerDoc{ID: n.ID, Type: n.Type})
		}
	}
	if withSource {
		d.Source = string(e.Source)
		d.Graph = s.graphDoc(e.W)
		d.Warnings = s.scrubDiagnostics(e.Warnings)
	}
	return d
}

func (s *Server) registry() *node.Registry {
	if s.cfg.Registry != nil {
		return s.cfg.Registry
	}
	return node.Default
}

func (s *Server) listWorkflows(w http.ResponseWriter, _ *http.Request) error {
	c := s.Catalog()
	out := struct {
		Workflows []WorkflowDoc `json:"workflows"`
		Problems  []FileProblem `json:"problems"`
	}{Workflows: []WorkflowDoc{}, Problems: make([]FileProblem, 0, len(c.Problems))}
	for _, p := range c.Problems { // named as the workflows folder names them, no path of the server's
		p.File = filepath.Base(p.File)
		p.Message, _ = s.paths.Scrub(p.Message, "")
		p.Diagnostics = s.scrubDiagnostics(p.Diagnostics)
		out.Problems = append(out.Problems, p)
	}
	for _, e := range c.Workflows {
		out.Workflows = append(out.Workflows, s.workflowDoc(e, false))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// entry returns the served workflow name, or the problem that it is not.
func (s *Server) entry(name string) (*Entry, error) {
	c := s.Catalog()
	if e := c.Lookup(name); e != nil {
		return e, nil
	}
	if p := c.problemFor(name); p != nil {
		prob := problemf(http.StatusUnprocessableEntity, CodeInvalidWorkflow, "%s is not served: %s", p.File, p.Message)
		prob.Diagnostics = p.Diagnostics
		return nil, prob
	}
	return nil, problemf(http.StatusNotFound, CodeNotFound, "no workflow %q is served; GET /api/workflows lists them", name)
}

func (s *Server) getWorkflow(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entry(r.PathValue("name"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.workflowDoc(e, true))
	return nil
}

// ValidateResult is the answer of POST /api/workflows/validate.
type ValidateResult struct {
	Valid       bool                  `json:"valid"`
	Diagnostics []workflow.Diagnostic `json:"diagnostics"`
	// Nodes are the draft's nodes with the handles and output ports their
	// kinds give them (a switch's handles follow its cases).
	Nodes []ValidateNode `json:"nodes"`
}

// validateWorkflow checks the workflow text of the body as `skein
// validate` checks a file, without writing it anywhere: as the file
// ?file= of --workflows (a file name there; by default inline.yaml, or
// inline.json for a JSON content type), whose folder the files it names
// by a relative path (a subworkflow) are taken from. An invalid workflow
// is a 200 answer with valid false.
func (s *Server) validateWorkflow(w http.ResponseWriter, r *http.Request) error {
	src, err := readBody(w, r, editBodyLimit)
	if err != nil {
		return err
	}
	if err := reqbody.CheckUTF8("the workflow text", src); err != nil {
		return err
	}
	name := r.URL.Query().Get("file")
	switch {
	case name != "":
		if err := checkFileName(name); err != nil {
			return err
		}
	case strings.Contains(r.Header.Get("Content-Type"), "json"):
		name = "inline.json"
	default:
		name = "inline.yaml"
	}
	dir, err := s.workflowsDir()
	if err != nil {
		return err
	}
	wf, ds := workflow.LoadSource(filepath.Join(dir, name), src, s.registry())
	out := ValidateResult{Valid: !ds.HasErrors(), Diagnostics: s.relDiagnostics(ds, dir), Nodes: draftNodes(wf, s.registry())}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// StartBody is the body of POST /api/workflows/{name}/runs.
type StartBody struct {
	Inputs  map[string]any `json:"inputs"`
	Trigger string         `json:"trigger"`
}

// maxKeyLen bounds an Idempotency-Key.
const maxKeyLen = 255

// startRun starts a run of a served workflow and answers 202 with the run
// as soon as it is recorded. With an Idempotency-Key, the run that key
// started before, if any, is the answer (200) — also when several requests
// with the key arrive at once: the key names the run (its id is derived
// from the workflow and the key), so one run exists per key.
func (s *Server) startRun(w http.ResponseWriter, r *http.Request) error {
	e, err := s.entry(r.PathValue("name"))
	if err != nil {
		return err
	}
	var body StartBody
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	in, err := reqbody.Inputs(body.Inputs)
	if err != nil {
		return err
	}
	inputs, err := e.W.ResolveInputs(in)
	if err != nil {
		return problemf(http.StatusBadRequest, CodeInvalidInputs, "%v", err)
	}
	key := r.Header.Get("Idempotency-Key")
	if len(key) > maxKeyLen {
		return problemf(http.StatusBadRequest, CodeBadRequest, "the Idempotency-Key is longer than %d bytes", maxKeyLen)
	}
	runID := ""
	if key != "" {
		runID = keyRunID(e.Name, key)
		unlock := s.keys.lock(runID)
		defer unlock()
		if done, err := s.replay(w, r, runID, inputs); done || err != nil {
			return err
		}
	}
	run, err := s.launch(r.Context(), "run started", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
		return s.cfg.Runner.Start(ctx, runner.StartRequest{Workflow: e.W, Inputs: inputs, Trigger: body.Trigger, RunID: runID, Options: o})
	})
	if errors.Is(err, runner.ErrExists) && runID != "" {
		// Another process started the key's run meanwhile.
		if done, err := s.replay(w, r, runID, inputs); done || err != nil {
			return err
		}
	}
	if err != nil {
		return err
	}
	return s.accepted(w, r, run.ID)
}

// answerRun returns the document of run id as an answer gives it: its
// workflow file, run folder and big values' files named as a problem's
// detail names them (pathscrub), not by the server's absolute paths.
func (s *Server) answerRun(ctx context.Context, id string) (*runner.RunDoc, error) {
	doc, err := s.cfg.Runner.Get(ctx, id)
	if err != nil {
		return nil, err
	}
	doc.Scrub(s.paths)
	return doc, nil
}

// replay answers with the run an idempotency key started, when it exists:
// 200, or 422 when that run had other inputs.
func (s *Server) replay(w http.ResponseWriter, r *http.Request, runID string, inputs map[string]any) (bool, error) {
	doc, err := s.answerRun(r.Context(), runID)
	if errors.Is(err, runner.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return true, err
	}
	if !sameJSON(doc.Inputs, inputs) {
		p := problemf(http.StatusUnprocessableEntity, CodeIdempotencyReuse,
			"the Idempotency-Key started run %s with other inputs; use a new key for a new request", runID)
		p.ExecutionID = runID
		return true, p
	}
	w.Header().Set("Location", "/api/runs/"+runID)
	w.Header().Set("Idempotent-Replayed", "true")
	writeJSON(w, http.StatusOK, doc)
	return true, nil
}

// keyRunID is the id of the run an idempotency key starts: a run id is 12
// hex digits, as random ones are.
func keyRunID(workflowName, key string) string {
	sum := sha256.Sum256([]byte("skein idempotency\x00" + workflowName + "\x00" + key))
	return hex.EncodeToString(sum[:6])
}

func sameJSON(a, b any) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && bytes.Equal(ja, jb)
}

// accepted answers 202 with the run an execution started or continued.
func (s *Server) accepted(w http.ResponseWriter, r *http.Request, id string) error {
	doc, err := s.answerRun(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/runs/"+id)
	writeJSON(w, http.StatusAccepted, doc)
	return nil
}

// RunSummary is a run in a list: the fields of the run document without
// its steps, inputs and outputs.
type RunSummary struct {
	ExecutionID string `json:"execution_id"`
	Workflow    string `json:"workflow"`
	Status      string `json:"status"`
	Trigger     string `json:"trigger,omitempty"`
	// Source and ReplayOf are the run document's: how the run was
	// started, and the run a replay replays.
	Source     string      `json:"source,omitempty"`
	ReplayOf   string      `json:"replay_of,omitempty"`
	ParentID   string      `json:"parent_id,omitempty"`
	Error      *node.Error `json:"error"`
	Generation int         `json:"generation"`
	StartedAt  time.Time   `json:"started_at"`
	FinishedAt *time.Time  `json:"finished_at"`
	DurationMS int64       `json:"duration_ms"`
	Tokens     int         `json:"tokens"`
	CostUSD    float64     `json:"cost_usd"`
	// Verdict is the status of the run's checks (PASSED, PASSED WITH
	// WARNINGS, FAILED, INCOMPLETE) once they ran; empty for a run with no
	// checks, or still running.
	Verdict string `json:"verdict,omitempty"`
}

// RunList is a page of runs, newest first; Next, when set, is the cursor
// of the next page.
type RunList struct {
	Runs []RunSummary `json:"runs"`
	Next string       `json:"next,omitempty"`
}

// Page sizes of GET /api/runs.
const (
	defaultPage = 50
	maxPage     = 500
)

var runStatuses = []string{"pending", "running", "waiting", "completed", "failed", "cancelled", string(runner.StatusInterrupted)}

func (s *Server) listRuns(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	req := runner.ListRequest{Workflow: q.Get("workflow"), Status: q.Get("status"), Parent: q.Get("parent"), Limit: defaultPage}
	if req.Status != "" && !contains(runStatuses, req.Status) {
		return problemf(http.StatusBadRequest, CodeBadRequest, "status %q is not a run status; use one of %s", req.Status, strings.Join(runStatuses, ", "))
	}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxPage {
			return problemf(http.StatusBadRequest, CodeBadRequest, "limit must be a whole number from 1 to %d", maxPage)
		}
		req.Limit = n
	}
	if v := q.Get("cursor"); v != "" {
		c, err := parseCursor(v)
		if err != nil {
			return problemf(http.StatusBadRequest, CodeBadRequest, "cursor %q is not one this server gave (use the next of a page)", v)
		}
		req.After = c
	}
	limit := req.Limit
	req.Limit++ // one more tells whether there is a next page
	runs, err := s.cfg.Runner.List(r.Context(), req)
	if err != nil {
		return err
	}
	out := RunList{Runs: make([]RunSummary, 0, len(runs))}
	if len(runs) > limit {
		runs = runs[:limit]
		last := runs[limit-1]
		out.Next = formatCursor(runner.Cursor{StartedAt: last.StartedAt, ID: last.ID})
	}
	for _, run := range runs {
		out.Runs = append(out.Runs, summary(run))
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func summary(run *record.Run) RunSummary {
	sm := RunSummary{ExecutionID: run.ID, Workflow: run.Workflow, Status: string(run.Status), Trigger: run.Trigger, ParentID: run.ParentID,
		Source: run.Source, ReplayOf: run.ReplayOf,
		Error: run.Error, Generation: run.Generation, StartedAt: run.StartedAt, FinishedAt: run.FinishedAt, Tokens: run.Tokens, CostUSD: run.CostUSD}
	if run.FinishedAt != nil {
		sm.DurationMS = run.FinishedAt.Sub(run.StartedAt).Milliseconds()
		sm.Verdict = runner.VerdictStatus(run)
	}
	return sm
}

// A cursor is the start time (µs) and id of the last run of a page,
// base64url-encoded: opaque to clients.
func formatCursor(c runner.Cursor) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(c.StartedAt.UnixMicro(), 10) + ":" + c.ID))
}

func parseCursor(s string) (*runner.Cursor, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	us, id, ok := strings.Cut(string(raw), ":")
	n, err := strconv.ParseInt(us, 10, 64)
	if !ok || err != nil || id == "" {
		return nil, errors.New("malformed cursor")
	}
	return &runner.Cursor{StartedAt: time.UnixMicro(n).UTC(), ID: id}, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	doc, err := s.answerRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// runGraph answers the graph of the workflow version a run executed,
// which may differ from the served file as it is now; 404 for a run that
// was not stored with its workflow.
func (s *Server) runGraph(w http.ResponseWriter, r *http.Request) error {
	wf, err := s.cfg.Runner.RunWorkflow(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, s.graphDoc(wf))
	return nil
}

// maxCancelWait bounds ?wait= of a cancel.
const maxCancelWait = time.Minute

// CancelBody is the body of POST /api/runs/{id}/cancel (optional).
type CancelBody struct {
	// LetFinish lets the running nodes finish; by default they are
	// stopped.
	LetFinish bool `json:"let_finish"`
}

// cancelRun asks the run's owner to cancel it (wherever it runs) and
// answers with the run: cancelled, or still running when ?wait= (default
// 0, at most a minute) passed before its owner stopped it.
func (s *Server) cancelRun(w http.ResponseWriter, r *http.Request) error {
	var body CancelBody
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	var wait time.Duration
	if v := r.URL.Query().Get("wait"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > maxCancelWait {
			return problemf(http.StatusBadRequest, CodeBadRequest, "wait must be a duration from 0s to %s, like 5s", maxCancelWait)
		}
		wait = d
	}
	run, err := s.cfg.Runner.Cancel(r.Context(), runner.CancelRequest{RunID: r.PathValue("id"), Wait: wait, LetFinish: body.LetFinish})
	if err != nil {
		return err
	}
	doc, err := s.answerRun(r.Context(), run.ID)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}

// resumeRun continues a failed, cancelled or interrupted run in the
// background and answers 202 with it once it is claimed.
func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) error {
	if err := decodeBody(w, r, &struct{}{}); err != nil {
		return err
	}
	id := r.PathValue("id")
	run, err := s.launch(r.Context(), "run resumed", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
		return s.cfg.Runner.Resume(ctx, runner.ResumeRequest{RunID: id, Options: o})
	})
	if err != nil {
		return err
	}
	return s.accepted(w, r, run.ID)
}

// RerunBody is the body of POST /api/runs/{id}/rerun.
type RerunBody struct {
	// Pins are nodes whose outputs are taken from the run instead of
	// running them again.
	Pins []string `json:"pins"`
}

// rerunRun starts a new run with the run's workflow and inputs, reusing
// the pinned nodes' outputs, and answers 202 with the new run.
func (s *Server) rerunRun(w http.ResponseWriter, r *http.Request) error {
	var body RerunBody
	if err := decodeBody(w, r, &body); err != nil {
		return err
	}
	id := r.PathValue("id")
	run, err := s.launch(r.Context(), "run started (rerun of "+id+")", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
		return s.cfg.Runner.Rerun(ctx, runner.RerunRequest{RunID: id, Pins: body.Pins, Options: o})
	})
	if err != nil {
		return err
	}
	return s.accepted(w, r, run.ID)
}

// live reports whether a run with this status may still change.
func live(status record.RunStatus) bool {
	switch status {
	case record.RunRunning, record.RunPending, record.RunWaiting:
		return true
	}
	return false
}

// SignalAnswer is the answer of POST /api/runs/{id}/signals/{node}: the
// recorded signal and the run.
type SignalAnswer struct {
	ExecutionID string `json:"execution_id"`
	Node        string `json:"node"`
	// Visit is the visit of the node whose waiting step takes the signal.
	Visit      int       `json:"visit"`
	Seq        int64     `json:"seq"`
	SignaledAt time.Time `json:"signaled_at"`
	// Run is the run once the signal is recorded: resumed when nobody ran
	// it, else still in the hands of its owner, which applies the signal.
	Run *runner.RunDoc `json:"run"`
}

// signalRun records the body (any JSON value; an empty body is {}) as the
// signal of the run's wait node, then resumes the run when no process runs
// it. 202: the signal is on record and will be applied.
func (s *Server) signalRun(w http.ResponseWriter, r *http.Request) error {
	raw, err := readBody(w, r, maxBody)
	if err != nil {
		return err
	}
	var data any = map[string]any{}
	if len(bytes.TrimSpace(raw)) > 0 {
		if err := reqbody.DecodeJSON(raw, &data, false); err != nil {
			return err
		}
		// Numbers stay json.Numbers: the store keeps them as JSON, and the
		// run reads them back as ints or floats.
		if _, err := reqbody.Numbers(data, false); err != nil {
			return err
		}
	}
	id, nodeID := r.PathValue("id"), r.PathValue("node")
	res, err := s.cfg.Runner.Signal(r.Context(), runner.SignalRequest{RunID: id, Node: nodeID, Data: data})
	if err != nil {
		return err
	}
	s.log.Info("signal recorded", "run", id, "node", nodeID, "visit", res.Signal.Visit)
	if res.Resume != "" {
		root := res.Resume
		_, err := s.launch(r.Context(), "run resumed by a signal", func(ctx context.Context, o runner.Options) (*runner.Result, error) {
			return s.cfg.Runner.Resume(ctx, runner.ResumeRequest{RunID: root, Options: o})
		})
		if err != nil && !errors.Is(err, runner.ErrOwned) {
			// The signal is on record and its run due: the next resume
			// (this server's waker, or its successor's) applies it.
			s.log.Warn("resuming a signalled run", "run", root, "err", err)
		}
	}
	doc, err := s.answerRun(r.Context(), id)
	if err != nil {
		return err
	}
	w.Header().Set("Location", "/api/runs/"+id)
	writeJSON(w, http.StatusAccepted, SignalAnswer{ExecutionID: id, Node: nodeID, Visit: res.Signal.Visit, Seq: res.Signal.Seq,
		SignaledAt: res.Signal.CreatedAt, Run: doc})
	return nil
}
