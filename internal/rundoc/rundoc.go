package rundoc

import (
	"bytes"
	"encoding/json"
	"io"
	"time"

	"github.com/skeinhq/skein/internal/blob"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/pathscrub"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/node"
)

// Doc is the one JSON shape of a run (DESIGN §6): `skein run -o json`,
// `skein runs show -o json`, the MCP tools and the API print it, and
// schema/run.schema.json describes it.
type Doc struct {
	ExecutionID string            `json:"execution_id"`
	Workflow    string            `json:"workflow"`
	Status      record.RunStatus  `json:"status"`
	Outputs     map[string]any    `json:"outputs"`
	Error       *node.Error       `json:"error"`
	Steps       []Step            `json:"steps"`
	Verdict     *check.RunVerdict `json:"verdict"`
	Inputs      map[string]any    `json:"inputs"`
	Trigger     string            `json:"trigger,omitempty"`
	// Source is how the run was started: cli, api, webhook, schedule,
	// chat, mcp or replay; absent for a child run and runs recorded
	// before it was kept.
	Source string `json:"source,omitempty"`
	// ReplayOf is, for a replay, the run it replays.
	ReplayOf string `json:"replay_of,omitempty"`
	ParentID string `json:"parent_id,omitempty"`
	File     string `json:"file"`
	Dir      string `json:"dir"`
	// Generation counts the run's executions: 1, then one more per resume.
	Generation int        `json:"generation"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	DurationMS int64      `json:"duration_ms"`
	Tokens     int        `json:"tokens"`
	CostUSD    float64    `json:"cost_usd"`
	// Owner is the process running the run, while it runs.
	Owner *Owner `json:"owner,omitempty"`
	// WakeAt is, for a waiting run, the earliest wake-up time of its
	// waits; absent when only a signal can wake it.
	WakeAt *time.Time `json:"wake_at,omitempty"`

	// Warnings are the business errors (an API answering "ok": false)
	// --auto-repair found and left alone.
	Warnings []repair.Warning `json:"warnings"`
	// RepairedWorkflow and Repair say what --auto-repair did.
	RepairedWorkflow *string        `json:"repaired_workflow,omitempty"`
	Repair           *repair.Report `json:"repair,omitempty"`

	// more, when set, reads the steps after Steps as WriteJSON writes
	// them (Records.Each), and step makes each a document's step.
	more func(func(*record.Step) error) error
	step func(*record.Step) Step
}

// Scrub names the paths of the document as a server's answer names them
// (pathscrub): its workflow file, its run folder and the files of the big
// values its inputs, steps and outputs hold, relative to the server's
// folders instead of by the server's absolute paths.
func (d *Doc) Scrub(ps *pathscrub.Scrubber) {
	d.File, _ = ps.Scrub(d.File, "")
	d.Dir, _ = ps.Scrub(d.Dir, "")
	d.values(ps.Values)
}

// Blob is the big value with digest sum that the document holds (in its
// inputs, a step's parameters or output, its outputs), or nil.
func (d *Doc) Blob(sum string) *blob.Blob {
	var found *blob.Blob
	d.values(func(m map[string]any) map[string]any {
		blob.Replace(m, func(b *blob.Blob) (any, bool) {
			if found == nil && b.Digest() == sum {
				found = b
			}
			return b, false
		})
		return m
	})
	return found
}

// values sets each map of values the document holds to what f makes of it.
func (d *Doc) values(f func(map[string]any) map[string]any) {
	d.Inputs, d.Outputs = f(d.Inputs), f(d.Outputs)
	for i := range d.Steps {
		d.Steps[i].Params, d.Steps[i].Output = f(d.Steps[i].Params), f(d.Steps[i].Output)
	}
}

// Owner is who runs a run.
type Owner struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	LeaseUntil time.Time `json:"lease_until"`
}

// Step is one step in a Doc: the step record (package record).
type Step = record.Step

// Records are what a document is built from.
type Records struct {
	Run *record.Run
	// Status is the run's status as the runner sees it: a running run
	// whose owner died is interrupted.
	Status  record.RunStatus
	Steps   []*record.Step
	Verdict *check.RunVerdict
	// Output reads a step's output and the artifacts listed in its
	// directives (a queued step's), whether kept in the record or in a
	// file or blob it refers to.
	Output func(*record.Step) (out, artifacts map[string]any)
	// Each, when set, reads the run's steps in their order, calling its
	// function with each until it returns an error, instead of Steps: for a
	// run too long to hold whole, whose document reads them as its
	// WriteJSON writes them (ReadSteps reads them into Steps).
	Each func(func(*record.Step) error) error
}

// Build builds the document of a run from its records, times to the
// microsecond as a store keeps them.
func Build(in Records) *Doc {
	run := in.Run
	d := &Doc{
		ExecutionID: run.ID, Workflow: run.Workflow, Status: in.Status, Outputs: run.Outputs, Error: run.Error,
		Steps: make([]Step, 0, len(in.Steps)), Verdict: in.Verdict, Inputs: run.Inputs, Trigger: run.Trigger, ParentID: run.ParentID,
		Source: run.Source, ReplayOf: run.ReplayOf,
		File: run.File, Dir: run.Dir, Generation: run.Generation, StartedAt: usec(run.StartedAt), FinishedAt: usecPtr(run.FinishedAt),
		Tokens: run.Tokens, CostUSD: run.CostUSD, Warnings: []repair.Warning{}, WakeAt: usecPtr(run.WakeAt),
	}
	if d.Outputs == nil {
		d.Outputs = map[string]any{}
	}
	if d.Inputs == nil {
		d.Inputs = map[string]any{}
	}
	if d.FinishedAt != nil {
		d.DurationMS = d.FinishedAt.Sub(d.StartedAt).Milliseconds()
	}
	if run.Owner.Token != "" && !run.LeaseExpired {
		d.Owner = &Owner{Host: run.Owner.Host, PID: run.Owner.PID, LeaseUntil: run.LeaseUntil}
	}
	for _, s := range in.Steps {
		d.Steps = append(d.Steps, in.step(s))
	}
	if in.Each != nil {
		d.more, d.step = in.Each, in.step
	}
	return d
}

// ReadSteps reads the steps of a document built with Records.Each into its
// Steps, for a document held whole.
func (d *Doc) ReadSteps() error {
	if d.more == nil {
		return nil
	}
	more := d.more
	d.more = nil
	return more(func(s *record.Step) error {
		d.Steps = append(d.Steps, d.step(s))
		return nil
	})
}

// step is s as its run's document lists it.
func (in Records) step(s *record.Step) Step {
	step := *s
	step.RunID = in.Run.ID
	var artifacts map[string]any
	if in.Output != nil {
		step.Output, artifacts = in.Output(s)
	}
	step.Directives = nil
	step.StartedAt, step.FinishedAt, step.WakeAt = usecPtr(s.StartedAt), usecPtr(s.FinishedAt), usecPtr(s.WakeAt)
	step.Artifacts, _ = Artifacts(artifacts)
	return step
}

// AddRepair adds what --auto-repair did to the document: its report, the
// warnings it left alone and the repaired workflow, each through red so
// that the document holds no secret.
func (d *Doc) AddRepair(red *redact.Redactor, rep *repair.Report) {
	if rep == nil {
		return
	}
	masked, _ := redact.Into(red, rep) // JSON fields only: the rest is read from rep
	d.Repair = masked
	if rep.Warnings != nil {
		d.Warnings, _ = redact.Into(red, rep.Warnings)
	}
	if rep.Workflow != nil {
		src := red.String(string(rep.Workflow))
		d.RepairedWorkflow = &src
	}
}

// usec is t as the store keeps it: UTC, to the microsecond.
func usec(t time.Time) time.Time { return t.UTC().Truncate(time.Microsecond) }

func usecPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := usec(*t)
	return &u
}

// StepRecords returns the document's steps, in step order: the node files
// of a traced run list them (runlog.StepLister).
func (d *Doc) StepRecords() []record.Step { return d.Steps }

// WriteJSON writes the document as compact JSON (what encoding/json's
// Encoder writes: no indent, <, > and & unescaped, a final newline), one
// step at a time, so that a run with many big steps is never whole in
// memory (run.json). Compact: indenting a run of many steps costs more
// than the reader who wants it indented pays (jq . run.json).
func (d *Doc) WriteJSON(w io.Writer) error {
	if len(d.Steps) == 0 && d.more == nil {
		return encode(w, d)
	}
	head := *d
	head.Steps = []Step{}
	var buf bytes.Buffer
	if err := encode(&buf, &head); err != nil {
		return err
	}
	text := buf.Bytes()
	at := stepsAt(text)
	if at < 0 {
		return encode(w, d)
	}
	if _, err := w.Write(text[:at]); err != nil {
		return err
	}
	buf = bytes.Buffer{} // text keeps the head's bytes
	n := 0
	write := func(s *Step) error {
		buf.Reset()
		if n > 0 {
			buf.WriteByte(',')
		}
		n++
		if step, ok := appendStep(buf.AvailableBuffer(), s); ok {
			buf.Write(step)
		} else {
			if err := encode(&buf, s); err != nil {
				return err
			}
			buf.Truncate(buf.Len() - 1) // the newline
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	for i := range d.Steps {
		if err := write(&d.Steps[i]); err != nil {
			return err
		}
	}
	if d.more != nil {
		err := d.more(func(s *record.Step) error {
			step := d.step(s)
			return write(&step)
		})
		if err != nil {
			return err
		}
	}
	_, err := w.Write(text[at:])
	return err
}

// stepsAt returns where the ] of the document's own "steps":[] is in text,
// the compact encoding of a document with no steps, or -1: a key of the
// top-level object, not one of the same name in an output or an input.
func stepsAt(text []byte) int {
	key := []byte(`"steps":[]`)
	depth, inString := 0, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case inString:
			if c == '\\' {
				i++ // the escaped character
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			// A value is followed by , or }: only a key matches.
			if depth == 1 && bytes.HasPrefix(text[i:], key) {
				return i + len(key) - 1
			}
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
		}
	}
	return -1
}

func encode(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
