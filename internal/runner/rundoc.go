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
// nothing back but the steps a long run let go of (Config.KeptSteps), from
// the store (an error reading them becomes res.Err when it has none). Every
// part of it goes through the run's Redactor, as the stored records did:
// the document every front end prints holds no secret.
func (r *Runner) Doc(ctx context.Context, res *Result) *RunDoc {
	d := r.StreamDoc(ctx, res)
	if err := d.ReadSteps(); err != nil && res.Err == nil {
		res.Err = err
	}
	return d
}

// StreamDoc is Doc for a document that is only written (run.json, skein run
// -o json): the steps a long run let go of are read from the store as its
// WriteJSON writes them, and are not in its Steps.
func (r *Runner) StreamDoc(ctx context.Context, res *Result) *RunDoc {
	red := res.redact
	verdict, _ := redact.Into(red, res.Verdict)
	run := durable.RedactRun(red, res.Run)
	in := rundoc.Records{Run: run, Status: r.Status(run), Verdict: verdict, Output: stepOutput}
	if res.Engine != nil {
		in.Steps, in.Each = durable.DocSteps(ctx, r.st, res.Run, res.Engine, red)
	}
	d := rundoc.Build(in)
	d.AddRepair(red, res.Repair)
	if d.FinishedAt == nil && res.Engine != nil {
		d.DurationMS = res.Engine.DurationMS
	}
	return d
}

func cancelledError() *node.Error {
	return &node.Error{Code: "cancelled", Category: node.CategoryCancelled, Message: "the run was cancelled"}
}
