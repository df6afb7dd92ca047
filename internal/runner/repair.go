package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/workflow"
)

// maxRepairAttempts is how many workflows the repair model is asked for in
// each phase (validation, runtime); a reply that does not validate counts.
const maxRepairAttempts = 3

// RepairRequest runs a workflow with --auto-repair: a validation error or
// a repairable runtime error goes to the repair model, whose corrected
// workflow is validated, shown as a diff (Observer.Note) and run, resuming
// from the checkpoint.
type RepairRequest struct {
	File string
	// Inputs resolves the run's inputs against the workflow as it is once
	// it validates (a repair may change it).
	Inputs  func(w *workflow.Workflow) (map[string]any, error)
	Trigger string
	// NoUpdate leaves File as it is and keeps the repaired workflow in
	// <name>.repaired.yaml beside it.
	NoUpdate bool
	Options
}

// RepairReport is what the repair loop did, for the JSON result.
type RepairReport struct {
	// Workflow is the repaired workflow's text, when one was used.
	Workflow []byte           `json:"-"`
	Attempts []RepairAttempt  `json:"attempts"`
	Diff     []repair.Change  `json:"diff"`
	Changes  []string         `json:"changes"`
	File     string           `json:"file"`
	Backup   string           `json:"backup"`
	Stopped  string           `json:"stopped"`
	Tokens   int              `json:"tokens"`
	CostUSD  float64          `json:"cost_usd"`
	Warnings []repair.Warning `json:"-"`
}

// repairing is one run with --auto-repair: the workflow as it is now, the
// attempts made, and what is reported at the end.
type repairing struct {
	r   *Runner
	req RepairRequest
	obs Observer

	file  string // the workflow file as given
	work  string // where repaired versions are written, beside file
	orig  []byte // file's text at the start
	origW *workflow.Workflow
	src   []byte             // the current workflow's text
	w     *workflow.Workflow // the current workflow
	// repaired is set once a repaired workflow is in use.
	repaired bool

	attempts map[repair.Phase]int
	seen     map[string]bool // signatures of the problems met so far
	earlier  []string        // the changes made so far, one per line
	log      []RepairAttempt
	warnings []repair.Warning
	stopped  string
	tokens   int
	costUSD  float64
	// unbilled is what the repair model cost since the last execution
	// began: the next execution's run counts it.
	unbilled engine.Spent
	// runSpent is what the run spent by its last execution's end.
	runSpent engine.Spent

	models *registry.Models
	// unpricedTold: the repair model has no price, and the user was told.
	unpricedTold bool
	provider     llm.Provider
	model        string
	modelDone    bool
	modelErr     error

	// Set by each execution.
	last   *Result
	assess repair.Assessment
}

// RepairAttempt is one answer of the repair model.
type RepairAttempt struct {
	Phase       repair.Phase     `json:"phase"`
	Attempt     int              `json:"attempt"`
	Problems    []repair.Problem `json:"problems"`
	Outcome     string           `json:"outcome"` // applied, invalid, unchanged
	Explanation string           `json:"explanation,omitempty"`
	Changes     []repair.Change  `json:"changes,omitempty"`
	Diagnostics []string         `json:"diagnostics,omitempty"`
}

// StartRepairing runs req.File, repairing it as needed. The result's
// Repair says what was done; an error is returned only when no run was
// made (the workflow stayed invalid, inputs are missing).
func (r *Runner) StartRepairing(ctx context.Context, req RepairRequest) (*Result, error) {
	s := &repairing{
		r: r, req: req, obs: req.Observer, file: req.File, work: repairedPath(req.File),
		attempts: map[repair.Phase]int{}, seen: map[string]bool{},
	}
	orig, err := workflow.ReadFile(req.File)
	if err != nil {
		_, err := r.Load(req.File)
		return nil, err
	}
	s.orig, s.src = orig, orig
	w, ds := workflow.Load(req.File, r.cfg.Registry)
	s.origW, s.w = w, w
	if ds.HasErrors() {
		for _, d := range ds {
			s.note("diagnostic", "%s", d.String())
		}
		problems := repair.FromDiagnostics(w, r.cfg.Registry, ds)
		s.seen[repair.Signature(problems)] = true
		if s.fix(ctx, repair.PhaseValidation, problems, nil) == nil {
			s.noteStop()
			return nil, &InvalidError{File: req.File}
		}
	}
	in, err := req.Inputs(s.w)
	if err != nil {
		s.keepNote()
		return nil, err
	}
	return s.runtime(ctx, job{w: s.w, inputs: in, trigger: req.Trigger, runID: NewRunID()})
}

// repairedPath is <name>.repaired.yaml beside file (.json for a JSON file).
func repairedPath(file string) string {
	ext := filepath.Ext(file)
	out := ".yaml"
	if strings.EqualFold(ext, ".json") {
		out = ".json"
	}
	return strings.TrimSuffix(file, ext) + ".repaired" + out
}

// runtime runs the job and, while the run fails with problems that may be
// repaired, repairs the workflow and resumes the run with it.
func (s *repairing) runtime(ctx context.Context, j job) (*Result, error) {
	for {
		res, err := s.execute(ctx, j)
		if err != nil {
			return s.finish(ctx, nil, err)
		}
		if res.Run.Status != engine.RunFailed {
			return s.finish(ctx, res, nil)
		}
		if s.assess.Blocked != "" {
			s.stopped = "not repaired: " + s.assess.Blocked
			s.noteStop()
			return s.finish(ctx, res, nil)
		}
		problems := s.assess.Problems
		sig := repair.Signature(problems)
		if s.seen[sig] {
			s.stopped = fmt.Sprintf("the same error came back after the repair: %s", problemLine(problems[0]))
			s.noteStop()
			return s.finish(ctx, res, nil)
		}
		s.seen[sig] = true
		if s.fix(ctx, repair.PhaseRuntime, problems, res.Engine) == nil {
			s.noteStop()
			return s.finish(ctx, res, nil)
		}
		if j, err = s.resume(ctx, res.Run.ID); err != nil {
			return s.finish(ctx, res, err)
		}
	}
}

// execute runs one job, keeping its result.
func (s *repairing) execute(ctx context.Context, j job) (*Result, error) {
	s.last, s.assess = nil, repair.Assessment{}
	w := j.w
	// What the repair model cost counts in the run's totals and budget.
	repaired := s.unbilled
	j.spent.Tokens += repaired.Tokens
	j.spent.CostUSD += repaired.CostUSD
	s.unbilled = engine.Spent{}
	j.finished = func(res *engine.Result, now time.Time) []engine.TimedEvent {
		s.assess = repair.Assess(w, s.r.cfg.Registry, res)
		var evs []engine.TimedEvent
		if repaired.Tokens > 0 || repaired.CostUSD > 0 {
			evs = append(evs, engine.TimedEvent{Time: now, Event: engine.Event{Type: EventRepairUsage,
				Data: map[string]any{"tokens": repaired.Tokens, "cost_usd": repaired.CostUSD}}})
		}
		for _, wn := range s.assess.Warnings {
			s.warnings = append(s.warnings, wn)
			evs = append(evs, engine.TimedEvent{Time: now, Event: engine.Event{
				Type: engine.EventWarning, Node: wn.Node, Visit: wn.Visit,
				Data: map[string]any{"message": "node " + wn.Node + ": " + wn.Message, "business_error": true},
			}})
		}
		return evs
	}
	res, err := s.r.execute(ctx, j, s.req.Options)
	s.last = res
	if res != nil {
		s.runSpent = engine.Spent{Tokens: res.Run.Tokens, CostUSD: res.Run.CostUSD}
	}
	return res, err
}

// EventRepairUsage is the event that records, in the run it went into,
// what the repair model cost (its tokens and cost_usd are in the run's
// totals).
const EventRepairUsage = "repair_usage"

// resume prepares the job that continues run id with the current
// workflow: succeeded steps whose node and inputs are unchanged are reused.
func (s *repairing) resume(ctx context.Context, id string) (job, error) {
	run, err := s.r.run(ctx, id)
	if err != nil {
		return job{}, err
	}
	hist, err := s.r.st.StepHistory(ctx, run.ID)
	if err != nil {
		return job{}, err
	}
	claimed, err := s.r.claim(ctx, run)
	if err != nil {
		return job{}, err
	}
	return job{w: s.w, inputs: claimed.Inputs, trigger: claimed.Trigger, runID: claimed.ID, resume: claimed, reuse: durable.ForResume(hist), wakes: durable.Wakes(hist),
		spent: s.r.spentBefore(ctx, claimed, hist)}, nil
}

// fix asks the repair model for a workflow without the problems, until one
// validates or the phase's attempts are spent. It returns the repaired
// workflow, now current, or nil with s.stopped saying why.
func (s *repairing) fix(ctx context.Context, phase repair.Phase, problems []repair.Problem, res *engine.Result) *workflow.Workflow {
	var steps []repair.Step
	if res != nil {
		steps = repair.Steps(s.w, res)
	}
	red := s.redactor()
	msgs := repair.Prompt(repair.Case{
		File: s.file, Source: s.src, Problems: problems, Steps: steps,
		Kinds: repair.Kinds(s.w, s.r.cfg.Registry), Earlier: s.earlier, Redact: red.Func(),
	})
	for {
		if s.attempts[phase] >= maxRepairAttempts {
			s.stopped = fmt.Sprintf("%d %s attempts did not fix the workflow; the last error: %s", maxRepairAttempts, phase, problemLine(problems[0]))
			return nil
		}
		s.attempts[phase]++
		n := s.attempts[phase]
		more := ""
		if len(problems) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(problems)-1)
		}
		s.note("repair", "[repair] %s attempt %d/%d: %s%s", phase, n, maxRepairAttempts, problemLine(problems[0]), more)
		reply, err := s.ask(ctx, msgs)
		if err != nil {
			s.stopped = "the repair model failed: " + err.Error()
			return nil
		}
		// A model that quotes a secret (one it read in a screenshot) has
		// it masked in what is shown and recorded.
		reply.Explanation = red.String(reply.Explanation)
		rec := RepairAttempt{Phase: phase, Attempt: n, Problems: problems, Explanation: reply.Explanation}
		cand, ds := s.decode(reply.Workflow)
		if !ds.HasErrors() && red.Contains(string(reply.Workflow)) && !red.Contains(string(s.src)) {
			// The file would keep the secret on disk, and in its backups.
			ds = append(ds, workflow.Diagnostic{File: s.work, Line: 1, Col: 1, Severity: workflow.Error,
				Message: "the repaired workflow holds the value of a secret; refer to it as {{ secrets.NAME }}"})
			reply.Workflow = []byte(red.String(string(reply.Workflow)))
		}
		if ds.HasErrors() {
			rec.Outcome = "invalid"
			for _, d := range ds.Errors() {
				rec.Diagnostics = append(rec.Diagnostics, d.String())
			}
			s.log = append(s.log, rec)
			s.note("problem", "[repair] the repaired workflow does not validate:")
			for _, l := range rec.Diagnostics {
				s.note("detail", "    %s", l)
			}
			problems = repair.FromDiagnostics(cand, s.r.cfg.Registry, ds)
			sig := repair.Signature(problems)
			if s.seen[sig] {
				s.stopped = fmt.Sprintf("the same error came back after attempt %d: %s", n, problemLine(problems[0]))
				return nil
			}
			s.seen[sig] = true
			answer, _ := json.Marshal(map[string]string{"workflow": string(reply.Workflow), "explanation": reply.Explanation})
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: string(answer)},
				llm.User(red.String("That workflow does not validate:\n"+strings.Join(rec.Diagnostics, "\n")+
					"\nFix these errors too and reply with the whole corrected workflow again.")))
			continue
		}
		changes := repair.Diff(s.w, cand)
		if len(changes) == 0 {
			rec.Outcome = "unchanged"
			s.log = append(s.log, rec)
			s.stopped = fmt.Sprintf("the same error came back after attempt %d: the repair model returned the workflow unchanged (%s)", n, problemLine(problems[0]))
			return nil
		}
		rec.Outcome, rec.Changes = "applied", changes
		s.log = append(s.log, rec)
		if err := os.WriteFile(s.work, reply.Workflow, fileMode(s.file)); err != nil {
			s.stopped = fmt.Sprintf("cannot write the repaired workflow: %v", err)
			return nil
		}
		for _, c := range changes {
			s.note("repaired", "[repaired] %s", c)
			s.earlier = append(s.earlier, c.String())
		}
		if reply.Explanation != "" {
			s.note("detail", "           %s", reply.Explanation)
		}
		s.src, s.w, s.repaired = reply.Workflow, cand, true
		return cand
	}
}

// ask sends the conversation to the repair model, resolving it on first
// use, and counts the tokens.
func (s *repairing) ask(ctx context.Context, msgs []llm.Message) (*repair.Reply, error) {
	if !s.modelDone {
		s.modelDone = true
		s.models = registry.New(s.w, s.r.cfg.LookupEnv)
		s.models.Render = secretRenderer(s.secrets())
		s.provider, s.model, s.modelErr = s.models.Get("repair")
	}
	if s.modelErr != nil {
		return nil, s.modelErr
	}
	// The repair model spends from the run's budget.
	if s.w != nil {
		b := engine.NewBudget(s.w.Limits.MaxTokens, s.w.Limits.MaxCostUSD, nil,
			s.runSpent.Tokens+s.unbilled.Tokens, s.runSpent.CostUSD+s.unbilled.CostUSD)
		if err := b.Check(); err != nil {
			return nil, err
		}
	}
	reply, resp, err := repair.Ask(ctx, s.provider, s.model, msgs)
	if resp != nil {
		cost, known := s.models.Cost(s.model, resp.Usage)
		if !known && !s.unpricedTold {
			s.unpricedTold = true
			s.note("warning", "the repair %s", s.models.Unpriced("repair", s.model, "its cost counts as $0"))
		}
		s.tokens += resp.Usage.TotalTokens
		s.costUSD += cost
		s.unbilled.Tokens += resp.Usage.TotalTokens
		s.unbilled.CostUSD += cost
	}
	return reply, err
}

// secrets are the current workflow's secret values, when they are all set.
func (s *repairing) secrets() map[string]string {
	if s.w == nil {
		return nil
	}
	sec, err := resolveSecrets(s.w, s.r.cfg.LookupEnv, s.req.SecretsFile)
	if err != nil {
		return nil
	}
	return sec
}

// redactor hides the secret values from the repair model, and from what
// the loop shows and records.
func (s *repairing) redactor() *redact.Redactor {
	return redact.New(s.secrets())
}

// decode reads and validates a workflow the model wrote, as if it were the
// file it will be written to.
func (s *repairing) decode(src []byte) (*workflow.Workflow, workflow.Diagnostics) {
	if strings.EqualFold(filepath.Ext(s.file), ".json") && !bytes.HasPrefix(bytes.TrimSpace(src), []byte("{")) {
		return nil, workflow.Diagnostics{{File: s.work, Line: 1, Col: 1, Severity: workflow.Error,
			Message: "the workflow must stay JSON, like " + filepath.Base(s.file)}}
	}
	w, ds := workflow.Decode(s.work, src)
	if w == nil {
		return nil, ds
	}
	ds = append(ds, workflow.Validate(w, s.r.cfg.Registry)...)
	ds.Sort()
	return w, ds
}

// finish saves the repaired workflow of a run that completed and puts
// what repair did into the result.
func (s *repairing) finish(ctx context.Context, res *Result, err error) (*Result, error) {
	if res != nil {
		s.bill(ctx, res.Run)
	}
	completed := res != nil && res.Run.Status == engine.RunCompleted
	var saved, backup string
	switch {
	case !s.repaired:
	case !completed:
		s.keepNote()
	case s.req.NoUpdate:
		saved = s.work
		s.note("repaired", "[repaired] the repaired workflow is in %s; %s is unchanged (--no-update)", s.work, s.file)
	default:
		var serr error
		if saved, backup, serr = s.save(ctx, res.Run.ID); serr != nil {
			s.note("stopped", "cannot replace %s with the repaired workflow: %v; it is in %s", s.file, serr, s.work)
			saved = s.work
		} else {
			s.note("repaired", "[repaired] saved %s (the original is %s)", saved, backup)
		}
	}
	if res == nil {
		return nil, err
	}
	res.Repair = s.report(saved, backup)
	return res, err
}

// bill adds what the repair model cost after the run's last execution
// (attempts that gave no workflow to run) to the run's totals, with its
// repair_usage event.
func (s *repairing) bill(ctx context.Context, run *store.Run) {
	spent := s.unbilled
	if spent.Tokens == 0 && spent.CostUSD == 0 {
		return
	}
	bg := context.WithoutCancel(ctx)
	cur, err := s.r.st.Run(bg, run.ID)
	if err != nil || !(cur.LeaseExpired || cur.Owner.Token == "") {
		return // it runs again somewhere: that execution is not told
	}
	cur.Tokens += spent.Tokens
	cur.CostUSD += spent.CostUSD
	if s.r.st.UpdateRun(bg, cur) != nil {
		return
	}
	s.unbilled = engine.Spent{}
	run.Tokens, run.CostUSD = cur.Tokens, cur.CostUSD
	_ = s.r.st.AppendEvents(bg, run.ID, []store.Event{{Time: s.r.clock.Now(), Type: EventRepairUsage,
		Data: map[string]any{"tokens": spent.Tokens, "cost_usd": spent.CostUSD}}})
}

// report is what repair did.
func (s *repairing) report(saved, backup string) *RepairReport {
	diff := []repair.Change{}
	if s.repaired {
		diff = append(diff, repair.Diff(s.origW, s.w)...)
	}
	log := s.log
	if log == nil {
		log = []RepairAttempt{}
	}
	rep := &RepairReport{
		Attempts: log, Diff: diff, Changes: repair.Lines(diff), File: saved, Backup: backup, Stopped: s.stopped,
		Tokens: s.tokens, CostUSD: s.costUSD, Warnings: dedupWarnings(s.warnings),
	}
	if s.repaired {
		rep.Workflow = s.src
	}
	return rep
}

// save replaces the workflow file with the repaired one, keeping the
// original as <file>.backup, and points the run's record at the file. A
// file that changed since the run started is left alone.
func (s *repairing) save(ctx context.Context, runID string) (saved, backup string, err error) {
	now, err := os.ReadFile(s.file)
	if err != nil {
		return "", "", err
	}
	if !bytes.Equal(now, s.orig) {
		return "", "", fmt.Errorf("%s changed while the run went on", s.file)
	}
	mode := fileMode(s.file)
	backup = s.file + ".backup"
	if err := os.WriteFile(backup, s.orig, mode); err != nil {
		return "", "", err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.file), "."+filepath.Base(s.file)+".*")
	if err != nil {
		return "", "", err
	}
	_, werr := tmp.Write(s.src)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Chmod(tmp.Name(), mode)
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), s.file)
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return "", "", werr
	}
	_ = os.Remove(s.work)
	// The run ran from the working copy; its record now names the file.
	if run, err := s.r.st.Run(ctx, runID); err == nil {
		run.File, _ = filepath.Abs(s.file)
		_ = s.r.st.UpdateRun(context.WithoutCancel(ctx), run)
	}
	return s.file, backup, nil
}

func fileMode(path string) os.FileMode {
	if fi, err := os.Stat(path); err == nil {
		return fi.Mode().Perm()
	}
	return 0o644
}

// keepNote says where the last repaired workflow is when it was not saved.
func (s *repairing) keepNote() {
	if s.repaired {
		s.note("problem", "[repair] the last repaired workflow is in %s; %s is unchanged", s.work, s.file)
	}
}

// noteStop says why the loop stopped.
func (s *repairing) noteStop() {
	if s.stopped != "" {
		s.note("stopped", "auto-repair stopped: %s", s.stopped)
	}
}

// note tells the observer one repair line, secrets masked.
func (s *repairing) note(kind, format string, args ...any) {
	if s.obs != nil {
		s.obs.Note(Note{Kind: kind, Text: s.redactor().String(fmt.Sprintf(format, args...))})
	}
}

// problemLine is a problem on one line: where, and the message.
func problemLine(p repair.Problem) string {
	where := ""
	if p.Node != "" {
		where = "node " + p.Node + ": "
	}
	return where + firstLine(p.Message)
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}

func dedupWarnings(ws []repair.Warning) []repair.Warning {
	out := []repair.Warning{}
	seen := map[repair.Warning]bool{}
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
