package repair

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// maxRepairAttempts is how many workflows the repair model is asked for in
// each phase (validation, runtime); a reply that does not validate counts.
const maxRepairAttempts = 3

// EventUsage is the event that records, in the run it went into, what
// the repair model cost (its tokens and cost_usd are in the run's
// totals).
const EventUsage = "repair_usage"

// ErrInvalid: the workflow did not validate, and the repair model did not
// make it valid; the notes said why.
var ErrInvalid = errors.New("the workflow is not valid")

// Runs is what the loop needs of the application layer that runs
// workflows (the runner): executing a workflow — a new run, or going on
// with a failed one — and keeping the run's record up to date.
type Runs interface {
	// Execute runs x to its end. The outcome is nil only with an error.
	Execute(ctx context.Context, x Execution) (*Outcome, error)
	// Bill adds spent, what the repair model cost after the run's last
	// execution, to the run's totals with an EventUsage event, unless the
	// run runs again somewhere (then that execution is not told). It
	// reports whether it did.
	Bill(ctx context.Context, runID string, spent engine.Spent) bool
	// Relocate points the run's record at file, the workflow file that
	// replaced the working copy it ran from.
	Relocate(ctx context.Context, runID, file string)
	// Secrets are w's secret values, nil when they are not all set.
	Secrets(w *workflow.Workflow) map[string]string
	// Models resolves the models of w, their templates rendered with
	// secrets: the repair model is its "repair" entry.
	Models(w *workflow.Workflow, secrets map[string]string) Models
}

// Models resolves a workflow's models by name and prices what they used
// (the llm kind's Models does).
type Models interface {
	Get(name string) (llm.Provider, string, error)
	Cost(model string, u llm.Usage) (usd float64, known bool)
	// Unpriced says that model, of entry name, has no price, and the
	// consequence.
	Unpriced(name, model, consequence string) string
}

// Execution is one execution the loop asks for.
type Execution struct {
	Workflow *workflow.Workflow
	// Inputs and Trigger are a new run's.
	Inputs  map[string]any
	Trigger string
	// Resume, when set, is the failed run to go on with, with Workflow:
	// the steps that succeeded, whose node and inputs are unchanged, are
	// reused.
	Resume string
	// Spent is what was spent for the run that its totals do not hold
	// yet (the repair model): it counts in them and in its budget.
	Spent engine.Spent
	// Finished sees the engine's result once the run ended and returns
	// events to record with it.
	Finished func(res *engine.Result, now time.Time) []engine.TimedEvent
}

// Outcome is how an execution ended.
type Outcome struct {
	RunID  string
	Status engine.RunStatus
	// Spent is the run's totals.
	Spent  engine.Spent
	Engine *engine.Result
}

// Request runs a workflow with --auto-repair: a validation error or a
// repairable runtime error goes to the repair model, whose corrected
// workflow is validated, shown as a diff (Note) and run, resuming from
// the checkpoint.
type Request struct {
	Runs     Runs
	Registry *node.Registry
	// File is the workflow file and Source its text, as read at the
	// start.
	File   string
	Source []byte
	// Inputs resolves the run's inputs against the workflow as it is once
	// it validates (a repair may change it).
	Inputs  func(w *workflow.Workflow) (map[string]any, error)
	Trigger string
	// NoUpdate leaves File as it is and keeps the repaired workflow in
	// <name>.repaired.yaml beside it.
	NoUpdate bool
	// Note, when set, gets each line of the loop for people ([repair],
	// [repaired]); kind is "repair", "repaired", "problem", "detail",
	// "diagnostic", "stopped" or "warning".
	Note func(kind, text string)
}

// Report is what the repair loop did, for the JSON result.
type Report struct {
	// Workflow is the repaired workflow's text, when one was used.
	Workflow []byte    `json:"-"`
	Attempts []Attempt `json:"attempts"`
	Diff     []Change  `json:"diff"`
	Changes  []string  `json:"changes"`
	File     string    `json:"file"`
	Backup   string    `json:"backup"`
	Stopped  string    `json:"stopped"`
	Tokens   int       `json:"tokens"`
	CostUSD  float64   `json:"cost_usd"`
	Warnings []Warning `json:"-"`
}

// repairing is one run with --auto-repair: the workflow as it is now, the
// attempts made, and what is reported at the end.
type repairing struct {
	req Request

	file  string // the workflow file as given
	work  string // where repaired versions are written, beside file
	orig  []byte // file's text at the start
	origW *workflow.Workflow
	src   []byte             // the current workflow's text
	w     *workflow.Workflow // the current workflow
	// repaired is set once a repaired workflow is in use.
	repaired bool

	attempts map[Phase]int
	seen     map[string]bool // signatures of the problems met so far
	earlier  []string        // the changes made so far, one per line
	log      []Attempt
	warnings []Warning
	stopped  string
	tokens   int
	costUSD  float64
	// unbilled is what the repair model cost since the last execution
	// began: the next execution's run counts it.
	unbilled engine.Spent
	// runSpent is what the run spent by its last execution's end.
	runSpent engine.Spent

	models Models
	// unpricedTold: the repair model has no price, and the user was told.
	unpricedTold bool
	provider     llm.Provider
	model        string
	modelDone    bool
	modelErr     error

	// Set by each execution.
	last   *Outcome
	assess Assessment
}

// Attempt is one answer of the repair model.
type Attempt struct {
	Phase       Phase     `json:"phase"`
	Attempt     int       `json:"attempt"`
	Problems    []Problem `json:"problems"`
	Outcome     string    `json:"outcome"` // applied, invalid, unchanged
	Explanation string    `json:"explanation,omitempty"`
	Changes     []Change  `json:"changes,omitempty"`
	Diagnostics []string  `json:"diagnostics,omitempty"`
}

// Run runs req.File, repairing it as needed. It returns the outcome of
// the last execution and what repair did; an error with no outcome when
// no run was made (the workflow stayed invalid: ErrInvalid; inputs are
// missing).
func Run(ctx context.Context, req Request) (*Outcome, *Report, error) {
	s := &repairing{
		req: req, file: req.File, work: repairedPath(req.File),
		attempts: map[Phase]int{}, seen: map[string]bool{},
	}
	s.orig, s.src = req.Source, req.Source
	w, ds := workflow.Load(req.File, req.Registry)
	s.origW, s.w = w, w
	if ds.HasErrors() {
		for _, d := range ds {
			s.note("diagnostic", "%s", d.String())
		}
		problems := FromDiagnostics(w, req.Registry, ds)
		s.seen[Signature(problems)] = true
		if s.fix(ctx, PhaseValidation, problems, nil) == nil {
			s.noteStop()
			return nil, nil, ErrInvalid
		}
	}
	in, err := req.Inputs(s.w)
	if err != nil {
		s.keepNote()
		return nil, nil, err
	}
	return s.runtime(ctx, Execution{Workflow: s.w, Inputs: in, Trigger: req.Trigger})
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

// runtime runs the execution and, while the run fails with problems that
// may be repaired, repairs the workflow and resumes the run with it.
func (s *repairing) runtime(ctx context.Context, x Execution) (*Outcome, *Report, error) {
	var prev *Outcome
	for {
		res, err := s.execute(ctx, x)
		if err != nil {
			// A resume that could not start leaves the run as the last
			// execution ended it.
			return s.finish(ctx, prev, err)
		}
		if res.Status != engine.RunFailed {
			return s.finish(ctx, res, nil)
		}
		if s.assess.Blocked != "" {
			s.stopped = "not repaired: " + s.assess.Blocked
			s.noteStop()
			return s.finish(ctx, res, nil)
		}
		problems := s.assess.Problems
		sig := Signature(problems)
		if s.seen[sig] {
			s.stopped = fmt.Sprintf("the same error came back after the repair: %s", problemLine(problems[0]))
			s.noteStop()
			return s.finish(ctx, res, nil)
		}
		s.seen[sig] = true
		if s.fix(ctx, PhaseRuntime, problems, res.Engine) == nil {
			s.noteStop()
			return s.finish(ctx, res, nil)
		}
		// The run goes on with the repaired workflow: succeeded steps
		// whose node and inputs are unchanged are reused.
		prev, x = res, Execution{Workflow: s.w, Resume: res.RunID}
	}
}

// execute runs one execution, keeping its outcome.
func (s *repairing) execute(ctx context.Context, x Execution) (*Outcome, error) {
	s.last, s.assess = nil, Assessment{}
	w := x.Workflow
	// What the repair model cost counts in the run's totals and budget.
	repaired := s.unbilled
	x.Spent = repaired
	s.unbilled = engine.Spent{}
	x.Finished = func(res *engine.Result, now time.Time) []engine.TimedEvent {
		s.assess = Assess(w, s.req.Registry, res)
		var evs []engine.TimedEvent
		if repaired.Tokens > 0 || repaired.CostUSD > 0 {
			evs = append(evs, engine.TimedEvent{Time: now, Event: engine.Event{Type: EventUsage,
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
	res, err := s.req.Runs.Execute(ctx, x)
	s.last = res
	if res != nil {
		s.runSpent = res.Spent
	}
	return res, err
}

// fix asks the repair model for a workflow without the problems, until one
// validates or the phase's attempts are spent. It returns the repaired
// workflow, now current, or nil with s.stopped saying why.
func (s *repairing) fix(ctx context.Context, phase Phase, problems []Problem, res *engine.Result) *workflow.Workflow {
	var steps []Step
	if res != nil {
		steps = Steps(s.w, res)
	}
	red := s.redactor()
	msgs := Prompt(Case{
		File: s.file, Source: s.src, Problems: problems, Steps: steps,
		Kinds: Kinds(s.w, s.req.Registry), Earlier: s.earlier, Redact: red.Func(),
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
		rec := Attempt{Phase: phase, Attempt: n, Problems: problems, Explanation: reply.Explanation}
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
				if d.File == s.work {
					d.File = "the proposed repair" // not written: it does not validate
				}
				rec.Diagnostics = append(rec.Diagnostics, d.String())
			}
			s.log = append(s.log, rec)
			s.note("problem", "[repair] the repaired workflow does not validate:")
			for _, l := range rec.Diagnostics {
				s.note("detail", "    %s", l)
			}
			problems = FromDiagnostics(cand, s.req.Registry, ds)
			sig := Signature(problems)
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
		changes := Diff(s.w, cand)
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
func (s *repairing) ask(ctx context.Context, msgs []llm.Message) (*Reply, error) {
	if !s.modelDone {
		s.modelDone = true
		s.models = s.req.Runs.Models(s.w, s.secrets())
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
	reply, resp, err := Ask(ctx, s.provider, s.model, msgs)
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
	return s.req.Runs.Secrets(s.w)
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
	ds = append(ds, workflow.Validate(w, s.req.Registry)...)
	ds.Sort()
	return w, ds
}

// finish saves the repaired workflow of a run that completed and reports
// what repair did, with the outcome res.
func (s *repairing) finish(ctx context.Context, res *Outcome, err error) (*Outcome, *Report, error) {
	if res != nil {
		s.bill(ctx, res.RunID)
	}
	completed := res != nil && res.Status == engine.RunCompleted
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
		if saved, backup, serr = s.save(ctx, res.RunID); serr != nil {
			s.note("stopped", "cannot replace %s with the repaired workflow: %v; it is in %s", s.file, serr, s.work)
			saved = s.work
		} else {
			s.note("repaired", "[repaired] saved %s (the original is %s)", saved, backup)
		}
	}
	if res == nil {
		return nil, nil, err
	}
	return res, s.report(saved, backup), err
}

// bill adds what the repair model cost after the run's last execution
// (attempts that gave no workflow to run) to the run's totals, with its
// repair_usage event.
func (s *repairing) bill(ctx context.Context, runID string) {
	spent := s.unbilled
	if spent.Tokens == 0 && spent.CostUSD == 0 {
		return
	}
	if s.req.Runs.Bill(context.WithoutCancel(ctx), runID, spent) {
		s.unbilled = engine.Spent{}
	}
}

// report is what repair did.
func (s *repairing) report(saved, backup string) *Report {
	diff := []Change{}
	if s.repaired {
		diff = append(diff, Diff(s.origW, s.w)...)
	}
	log := s.log
	if log == nil {
		log = []Attempt{}
	}
	rep := &Report{
		Attempts: log, Diff: diff, Changes: Lines(diff), File: saved, Backup: backup, Stopped: s.stopped,
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
	abs, _ := filepath.Abs(s.file)
	s.req.Runs.Relocate(context.WithoutCancel(ctx), runID, abs)
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
	if s.req.Note != nil {
		s.req.Note(kind, s.redactor().String(fmt.Sprintf(format, args...)))
	}
}

// problemLine is a problem on one line: where, and the message.
func problemLine(p Problem) string {
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

func dedupWarnings(ws []Warning) []Warning {
	out := []Warning{}
	seen := map[Warning]bool{}
	for _, w := range ws {
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}
