// Package schema derives the published descriptions of a workflow file from
// the node kinds' specs: the JSON Schema at schema/workflow.schema.json and
// the node reference at docs/nodes.md.
//
// Each kind declares its parameters once, in its node.Spec. Generate turns
// the specs of a registry into a JSON Schema (draft 2020-12) for the whole
// file: the top-level keys, and for each node the common fields plus the
// parameters of its kind, chosen by the node's `type`. Markdown turns the
// same specs into the reference docs. Neither is written by hand; a test in
// this package regenerates both from the built-in kinds and fails when the
// committed files are stale (refresh them with `go test ./internal/schema
// -update`).
//
// The schema is what an editor needs to complete and check a file as it is
// typed. It is not the authority: workflow.Validate is. Rules a kind checks
// in Go (Spec.Check: "set exactly one of prompt or messages", a cron
// expression that parses), template references and the graph (edges, handles,
// cycles) are beyond a schema and are left to the validator, so a file the
// schema accepts may still fail `skein validate`.
//
// Templates: a value of a String parameter is any string. A parameter of
// another type (integer, boolean, list, ...) may also be written as a
// template, a string holding "{{", whose value is known only at run time.
// Parameters marked NoTemplate or Expr take plain values only.
package schema
