package runner

import (
	"context"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/durable"
	"github.com/skeinhq/skein/internal/queue"
	"github.com/skeinhq/skein/internal/redact"
	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/store"
	"github.com/skeinhq/skein/node"
)

// The run document (package rundoc), under the names front ends know.
type (
	// RunDoc is the one JSON shape of a run (DESIGN §6).
	RunDoc = rundoc.Doc
	// OwnerDoc is who runs a run.
	OwnerDoc = rundoc.Owner
	// StepDoc is one step in a RunDoc: the step record (package record).
	StepDoc = rundoc.Step
	// ArtifactDoc is a file a node saved, as the run's document lists it.
	ArtifactDoc = rundoc.Artifact
)

// doc builds the document of a run from its records.
func (r *Runner) doc(run *store.Run, steps []*store.Step, v *check.RunVerdict) *RunDoc {
	return rundoc.Build(rundoc.Records{Run: run, Status: r.Status(run), Steps: steps, Verdict: v, Output: stepOutput})
}

// stepOutput is a step's output and the artifacts its directives list.
func stepOutput(s *store.Step) (out, artifacts map[string]any) {
	out, directives, _ := durable.Output(s)
	artifacts, _ = directives[queue.ArtifactsKey].(map[string]any)
	return out, artifacts
}

// Doc returns the document of an execution's result. It is built from the
// execution's own records the way Get builds it from the stored ones (times
// to the microsecond, as stored), so the two are the same document; it reads
// nothing back. Every part of it goes through the run's Redactor, as the
// stored records did: the document every front end prints holds no secret.
func (r *Runner) Doc(_ context.Context, res *Result) *RunDoc {
	red := res.redact
	var steps []*store.Step
	if res.Engine != nil {
		steps = make([]*store.Step, 0, len(res.Engine.Steps))
		for _, s := range res.Engine.Steps {
			steps = append(steps, durable.RedactStep(red, durable.DocStep(res.Run.ID, s)))
		}
	}
	verdict, _ := redact.Into(red, res.Verdict)
	d := r.doc(durable.RedactRun(red, res.Run), steps, verdict)
	d.AddRepair(red, res.Repair)
	if d.FinishedAt == nil && res.Engine != nil {
		d.DurationMS = res.Engine.DurationMS
	}
	return d
}

func cancelledError() *node.Error {
	return &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled"}
}
