package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	llmkind "github.com/skeinhq/skein/internal/nodes/llm"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// repairFlags are skein run's --auto-repair and --no-update.
type repairFlags struct {
	on       bool
	noUpdate bool
}

func (r *repairFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.BoolVar(&r.on, "auto-repair", false, "on a validation error or a repairable node error, ask the repair model for a corrected workflow, show its diff and resume from the checkpoint (at most 3 attempts per phase); a repaired run that completes replaces FILE, keeping FILE.backup")
	fl.BoolVar(&r.noUpdate, "no-update", false, "with --auto-repair: leave FILE as it is and keep the repaired workflow in <name>.repaired.yaml beside it")
}

func (r *repairFlags) check() error {
	if r.noUpdate && !r.on {
		return usagef("--no-update goes with --auto-repair")
	}
	return nil
}

// maxRepairAttempts is how many workflows the repair model is asked for in
// each phase (validation, runtime); a reply that does not validate counts.
const maxRepairAttempts = 3

// repairModelFor returns the repair model of a workflow (w may be nil): its
// llm.repair, else vision, else default, else the environment's
// (SKEIN_LLM_*).
func repairModelFor(w *workflow.Workflow, secrets map[string]string) (llm.Provider, string, error) {
	m := llmkind.NewModels(w, os.LookupEnv)
	m.Render = secretRenderer(secrets)
	return m.Get("repair")
}

// repairing is one `skein run --auto-repair`: the workflow as it is now, the
// attempts made, and what is reported at the end.
type repairing struct {
	e        *env
	f        *execFlags
	noUpdate bool
	// notes is where repair lines go: stdout with the progress, stderr
	// when stdout carries JSON.
	notes io.Writer
	color bool

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
	log      []repairAttempt
	warnings []repair.Warning
	stopped  string
	tokens   int
	costUSD  float64

	provider  llm.Provider
	model     string
	modelDone bool
	modelErr  error

	// Set by each execution.
	last   *engine.Result
	assess repair.Assessment
	out    bytes.Buffer // the JSON an execution printed
}

// repairAttempt is one answer of the repair model, for the JSON output.
type repairAttempt struct {
	Phase       repair.Phase     `json:"phase"`
	Attempt     int              `json:"attempt"`
	Problems    []repair.Problem `json:"problems"`
	Outcome     string           `json:"outcome"` // applied, invalid, unchanged
	Explanation string           `json:"explanation,omitempty"`
	Changes     []repair.Change  `json:"changes,omitempty"`
	Diagnostics []string         `json:"diagnostics,omitempty"`
}

// runRepairing is `skein run --auto-repair FILE`.
func runRepairing(ctx context.Context, e *env, f *execFlags, rf *repairFlags, file string, inputs []string, inputFile, trigger string) error {
	s := &repairing{
		e: e, f: f, noUpdate: rf.noUpdate, notes: e.stdout, color: isTerminal(e.stdout), file: file, work: repairedPath(file),
		attempts: map[repair.Phase]int{}, seen: map[string]bool{},
	}
	if f.output == "json" {
		s.notes, s.color = e.stderr, false
	}
	orig, err := workflow.ReadFile(file)
	if err != nil {
		_, err := loadWorkflow(e, file)
		return err
	}
	s.orig, s.src = orig, orig
	w, ds := workflow.Load(file, node.Default)
	s.origW, s.w = w, w
	if ds.HasErrors() {
		for _, d := range ds {
			fmt.Fprintln(e.stderr, d.String())
		}
		problems := repair.FromDiagnostics(w, node.Default, ds)
		s.seen[repair.Signature(problems)] = true
		if s.fix(ctx, repair.PhaseValidation, problems, nil) == nil {
			s.noteStop()
			return exit(ExitInvalid, nil)
		}
	}
	in, err := resolveInputs(s.w, inputs, inputFile)
	if err != nil {
		s.keepNote()
		return err
	}
	return s.runtime(ctx, job{w: s.w, inputs: in, trigger: trigger, runID: newRunID()})
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
func (s *repairing) runtime(ctx context.Context, j job) error {
	for {
		err := s.execute(ctx, j)
		res := s.last
		if res == nil || res.Status != engine.RunFailed {
			return s.finish(ctx, err, j.runID)
		}
		if s.assess.Blocked != "" {
			s.stopped = "not repaired: " + s.assess.Blocked
			s.noteStop()
			return s.finish(ctx, err, j.runID)
		}
		problems := s.assess.Problems
		sig := repair.Signature(problems)
		if s.seen[sig] {
			s.stopped = fmt.Sprintf("the same error came back after the repair: %s", problemLine(problems[0]))
			s.noteStop()
			return s.finish(ctx, err, j.runID)
		}
		s.seen[sig] = true
		if s.fix(ctx, repair.PhaseRuntime, problems, res) == nil {
			s.noteStop()
			return s.finish(ctx, err, j.runID)
		}
		if j, err = s.resume(ctx, j.runID); err != nil {
			return err
		}
	}
}

// execute runs one job, keeping its result and, in JSON mode, its output.
func (s *repairing) execute(ctx context.Context, j job) error {
	s.last, s.assess = nil, repair.Assessment{}
	w := j.w
	j.finished = func(res *engine.Result, now time.Time) []engine.TimedEvent {
		s.last = res
		s.assess = repair.Assess(w, node.Default, res)
		var evs []engine.TimedEvent
		for _, wn := range s.assess.Warnings {
			s.warnings = append(s.warnings, wn)
			evs = append(evs, engine.TimedEvent{Time: now, Event: engine.Event{
				Type: engine.EventWarning, Node: wn.Node, Visit: wn.Visit,
				Data: map[string]any{"message": "node " + wn.Node + ": " + wn.Message, "business_error": true},
			}})
		}
		return evs
	}
	e := s.e
	if s.f.output == "json" {
		s.out.Reset()
		e = &env{stdin: s.e.stdin, stdout: &s.out, stderr: s.e.stderr}
	}
	return execute(ctx, e, s.f, j)
}

// resume prepares the job that continues run id with the current
// workflow: succeeded steps whose node and inputs are unchanged are reused.
func (s *repairing) resume(ctx context.Context, id string) (job, error) {
	st, err := openStore(s.f.dir)
	if err != nil {
		return job{}, err
	}
	defer st.Close()
	run, err := findRun(ctx, st, id)
	if err != nil {
		return job{}, err
	}
	steps, err := st.Steps(ctx, run.ID)
	if err != nil {
		return job{}, exit(ExitFailed, err)
	}
	if err := st.DeleteSteps(ctx, run.ID); err != nil {
		return job{}, exit(ExitFailed, err)
	}
	return job{w: s.w, inputs: run.Inputs, trigger: run.Trigger, runID: run.ID, resume: run, reuse: durable.ForResume(steps)}, nil
}

// fix asks the repair model for a workflow without the problems, until one
// validates or the phase's attempts are spent. It returns the repaired
// workflow, now current, or nil with s.stopped saying why.
func (s *repairing) fix(ctx context.Context, phase repair.Phase, problems []repair.Problem, res *engine.Result) *workflow.Workflow {
	var steps []repair.Step
	if res != nil {
		steps = repair.Steps(s.w, res)
	}
	redact := s.redactor()
	msgs := repair.Prompt(repair.Case{
		File: s.file, Source: s.src, Problems: problems, Steps: steps,
		Kinds: repair.Kinds(s.w, node.Default), Earlier: s.earlier, Redact: redact,
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
		fmt.Fprintln(s.notes)
		s.note(cyan, "[repair] %s attempt %d/%d: %s%s", phase, n, maxRepairAttempts, problemLine(problems[0]), more)
		reply, err := s.ask(ctx, msgs)
		if err != nil {
			s.stopped = "the repair model failed: " + err.Error()
			return nil
		}
		rec := repairAttempt{Phase: phase, Attempt: n, Problems: problems, Explanation: reply.Explanation}
		cand, ds := s.decode(reply.Workflow)
		if ds.HasErrors() {
			rec.Outcome = "invalid"
			for _, d := range ds.Errors() {
				rec.Diagnostics = append(rec.Diagnostics, d.String())
			}
			s.log = append(s.log, rec)
			s.note(yellow, "[repair] the repaired workflow does not validate:")
			for _, l := range rec.Diagnostics {
				s.note("", "    %s", l)
			}
			problems = repair.FromDiagnostics(cand, node.Default, ds)
			sig := repair.Signature(problems)
			if s.seen[sig] {
				s.stopped = fmt.Sprintf("the same error came back after attempt %d: %s", n, problemLine(problems[0]))
				return nil
			}
			s.seen[sig] = true
			answer, _ := json.Marshal(map[string]string{"workflow": string(reply.Workflow), "explanation": reply.Explanation})
			msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: string(answer)},
				llm.User(redact("That workflow does not validate:\n"+strings.Join(rec.Diagnostics, "\n")+
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
			s.note(cyan, "[repaired] %s", c)
			s.earlier = append(s.earlier, c.String())
		}
		if reply.Explanation != "" {
			s.note(dim, "           %s", reply.Explanation)
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
		s.provider, s.model, s.modelErr = repairModelFor(s.w, s.secrets())
	}
	if s.modelErr != nil {
		return nil, s.modelErr
	}
	reply, resp, err := repair.Ask(ctx, s.provider, s.model, msgs)
	if resp != nil {
		s.tokens += resp.Usage.TotalTokens
		cost, _ := llm.Cost(resp.Model, resp.Usage, nil)
		s.costUSD += cost
	}
	return reply, err
}

// secrets are the current workflow's secret values, when they are all set.
func (s *repairing) secrets() map[string]string {
	if s.w == nil {
		return nil
	}
	sec, err := resolveSecrets(s.w, os.LookupEnv, s.f.secretsFile)
	if err != nil {
		return nil
	}
	return sec
}

// redactor hides the secret values from the repair model.
func (s *repairing) redactor() func(string) string {
	return engine.Redactor(s.secrets())
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
	ds = append(ds, workflow.Validate(w, node.Default)...)
	ds.Sort()
	return w, ds
}

// finish saves the repaired workflow of a run that completed, prints the
// JSON result with what repair did, and returns the run's error.
func (s *repairing) finish(ctx context.Context, runErr error, runID string) error {
	res := s.last
	completed := res != nil && res.Status == engine.RunCompleted
	var saved, backup string
	switch {
	case !s.repaired:
	case !completed:
		s.keepNote()
	case s.noUpdate:
		saved = s.work
		s.note(cyan, "[repaired] the repaired workflow is in %s; %s is unchanged (--no-update)", s.work, s.file)
	default:
		var err error
		if saved, backup, err = s.save(ctx, runID); err != nil {
			fmt.Fprintf(s.e.stderr, "skein: cannot replace %s with the repaired workflow: %v; it is in %s\n", s.file, err, s.work)
			saved = s.work
		} else {
			s.note(cyan, "[repaired] saved %s (the original is %s)", saved, backup)
		}
	}
	if s.f.output == "json" && s.out.Len() > 0 {
		var m map[string]any
		dec := json.NewDecoder(&s.out)
		dec.UseNumber()
		if err := dec.Decode(&m); err != nil {
			return exit(ExitFailed, fmt.Errorf("reading the run's JSON result: %w", err))
		}
		var repaired any
		if s.repaired {
			repaired = string(s.src)
		}
		m["repaired_workflow"] = repaired
		m["repair"] = s.report(saved, backup)
		m["warnings"] = dedupWarnings(s.warnings)
		writeJSON(s.e.stdout, m)
	}
	return runErr
}

// report is the repair object of the JSON result.
func (s *repairing) report(saved, backup string) map[string]any {
	diff := []repair.Change{}
	if s.repaired {
		diff = append(diff, repair.Diff(s.origW, s.w)...)
	}
	log := s.log
	if log == nil {
		log = []repairAttempt{}
	}
	return map[string]any{
		"attempts": log, "diff": diff, "changes": repair.Lines(diff),
		"file": saved, "backup": backup, "stopped": s.stopped,
		"tokens": s.tokens, "cost_usd": s.costUSD,
	}
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
	if st, err := openStore(s.f.dir); err == nil {
		if run, err := st.Run(ctx, runID); err == nil {
			run.File, _ = filepath.Abs(s.file)
			_ = st.UpdateRun(context.WithoutCancel(ctx), run)
		}
		st.Close()
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
		s.note(yellow, "[repair] the last repaired workflow is in %s; %s is unchanged", s.work, s.file)
	}
}

// noteStop prints why the loop stopped.
func (s *repairing) noteStop() {
	if s.stopped != "" {
		fmt.Fprintf(s.e.stderr, "skein: auto-repair stopped: %s\n", s.stopped)
	}
}

// note prints one repair line with the progress.
func (s *repairing) note(color, format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	if s.color && color != "" {
		line = color + line + reset
	}
	fmt.Fprintln(s.notes, line)
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
