package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"time"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/repair"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// RunDoc is the one JSON shape of a run (DESIGN §6): `skein run -o json`,
// `skein runs show -o json`, the MCP tools and the API print it, and
// schema/run.schema.json describes it.
type RunDoc struct {
	ExecutionID string            `json:"execution_id"`
	Workflow    string            `json:"workflow"`
	Status      record.RunStatus  `json:"status"`
	Outputs     map[string]any    `json:"outputs"`
	Error       *node.Error       `json:"error"`
	Steps       []StepDoc         `json:"steps"`
	Verdict     *check.RunVerdict `json:"verdict"`
	Inputs      map[string]any    `json:"inputs"`
	Trigger     string            `json:"trigger,omitempty"`
	ParentID    string            `json:"parent_id,omitempty"`
	File        string            `json:"file"`
	Dir         string            `json:"dir"`
	// Generation counts the run's executions: 1, then one more per resume.
	Generation int        `json:"generation"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	DurationMS int64      `json:"duration_ms"`
	Tokens     int        `json:"tokens"`
	CostUSD    float64    `json:"cost_usd"`
	// Owner is the process running the run, while it runs.
	Owner *OwnerDoc `json:"owner,omitempty"`
	// WakeAt is, for a waiting run, the earliest wake-up time of its
	// waits; absent when only a signal can wake it.
	WakeAt *time.Time `json:"wake_at,omitempty"`

	// Warnings are the business errors (an API answering "ok": false)
	// --auto-repair found and left alone.
	Warnings []repair.Warning `json:"warnings"`
	// RepairedWorkflow and Repair say what --auto-repair did.
	RepairedWorkflow *string       `json:"repaired_workflow,omitempty"`
	Repair           *RepairReport `json:"repair,omitempty"`
}

// OwnerDoc is who runs a run.
type OwnerDoc struct {
	Host       string    `json:"host"`
	PID        int       `json:"pid"`
	LeaseUntil time.Time `json:"lease_until"`
}

// StepDoc is one step in a RunDoc: the step record (package record).
type StepDoc = record.Step

// doc builds the document of a run from its records.
func (r *Runner) doc(run *store.Run, steps []*store.Step, v *check.RunVerdict) *RunDoc {
	d := &RunDoc{
		ExecutionID: run.ID, Workflow: run.Workflow, Status: r.Status(run), Outputs: run.Outputs, Error: run.Error,
		Steps: make([]StepDoc, 0, len(steps)), Verdict: v, Inputs: run.Inputs, Trigger: run.Trigger, ParentID: run.ParentID,
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
		d.Owner = &OwnerDoc{Host: run.Owner.Host, PID: run.Owner.PID, LeaseUntil: run.LeaseUntil}
	}
	for _, s := range steps {
		out, directives, _ := durable.Output(s)
		step := *s
		step.Output, step.Directives = out, nil
		step.StartedAt, step.FinishedAt, step.WakeAt = usecPtr(s.StartedAt), usecPtr(s.FinishedAt), usecPtr(s.WakeAt)
		step.Artifacts, _ = stepArtifacts(directives)
		d.Steps = append(d.Steps, step)
	}
	return d
}

// Doc returns the document of an execution's result. It is built from the
// execution's own records the way Get builds it from the stored ones (times
// to the microsecond, as stored), so the two are the same document; it
// reads nothing back. Every part of it goes through the run's Redactor, as
// the stored records did: the document every front end prints holds no
// secret.
func (r *Runner) Doc(_ context.Context, res *Result) *RunDoc {
	red := res.redact
	var steps []*store.Step
	if res.Engine != nil {
		steps = make([]*store.Step, 0, len(res.Engine.Steps))
		for _, s := range res.Engine.Steps {
			steps = append(steps, durable.RedactStep(red, durable.StepFromRecord(res.Run.ID, s)))
		}
	}
	verdict, _ := redact.Into(red, res.Verdict)
	d := r.doc(durable.RedactRun(red, res.Run), steps, verdict)
	if rep := res.Repair; rep != nil {
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
	if d.FinishedAt == nil && res.Engine != nil {
		d.DurationMS = res.Engine.DurationMS
	}
	return d
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

func cancelledError() *node.Error {
	return &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled"}
}

// WriteJSON writes the document as indented JSON (what encoding/json
// writes with a two-space indent, <, > and & unescaped, and a final
// newline), one step at a time, so that a run with many big steps is never
// whole in memory (run.json).
func (d *RunDoc) WriteJSON(w io.Writer) error {
	if len(d.Steps) == 0 {
		return encodeIndented(w, d, "")
	}
	head := *d
	head.Steps = []StepDoc{}
	var buf bytes.Buffer
	if err := encodeIndented(&buf, &head, ""); err != nil {
		return err
	}
	// Top-level keys are the only ones indented by two spaces.
	const key = "\n  \"steps\": []"
	text := buf.Bytes()
	at := bytes.Index(text, []byte(key))
	if at < 0 {
		return encodeIndented(w, d, "")
	}
	open := at + len(key) - 1 // at the ]
	if _, err := w.Write(text[:open]); err != nil {
		return err
	}
	buf = bytes.Buffer{} // text keeps the head's bytes
	for i := range d.Steps {
		buf.Reset()
		sep := ",\n    "
		if i == 0 {
			sep = "\n    "
		}
		buf.WriteString(sep)
		if err := encodeIndented(&buf, &d.Steps[i], "    "); err != nil {
			return err
		}
		buf.Truncate(buf.Len() - 1) // the newline
		if _, err := w.Write(buf.Bytes()); err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, "\n  "); err != nil {
		return err
	}
	_, err := w.Write(text[open:])
	return err
}

func encodeIndented(w io.Writer, v any, prefix string) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent(prefix, "  ")
	return enc.Encode(v)
}
