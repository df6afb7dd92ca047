package rundoc

import (
	"encoding/json"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/node"
)

// SchemaID is the $id of schema/run.schema.json.
const SchemaID = "https://skein.dev/schema/run.schema.json"

// Schema returns the JSON Schema of Doc, the one JSON shape of a run, as
// published in schema/run.schema.json.
func Schema() ([]byte, error) {
	s, err := jsonschema.For[Doc](nil)
	if err != nil {
		return nil, err
	}
	s.Properties["status"].Enum = []any{"pending", "running", "waiting", "completed", "failed", "cancelled", record.RunInterrupted}
	s.Properties["status"].Description = "interrupted: the process running it died; skein resume continues it"
	step := s.Properties["steps"].Items
	step.Properties["output"] = &jsonschema.Schema{Types: []string{"null", "object"}, Description: "the step's output object; null when it has none. " + bigValues}
	step.Properties["params"].Description = "the node's parameters as they were resolved, secrets masked. " + bigValues
	s.Properties["outputs"].Description = bigValues
	s.Defs = map[string]*jsonschema.Schema{"blob": blobSchema()}
	step.Properties["status"].Enum = []any{"pending", "running", "success", "failed", "skipped", "waiting", "cancelled"}
	step.Properties["skip_reason"].Enum = []any{record.SkipBranchNotTaken, record.SkipUpstreamFailed, record.SkipDeadPath, record.SkipDisabled, record.SkipCancelled, record.SkipRunFailed, record.SkipItemFailed}
	step.Properties["status"].Description = "pending: planned, not started (every node the run's start reaches is pending from the start; a loop pass's or foreach item's nodes from when the pass or item is planned); cancelled: stopped by a cancel, or never started because of one (then without started_at and ran_on); an ended run has no pending step"
	step.Properties["skip_reason"].Description = "why a skipped step did not run: branch_not_taken (it is on a handle its branch did not take; taken_handle says which was), upstream_failed (a node before it failed and went on, on_error continue or route, without firing the edge into it), dead_path (the nodes before it were skipped), disabled, run_failed (the run failed first), item_failed (its foreach item failed with on_error: continue); cancelled only in runs recorded before a cancel's unstarted steps were cancelled"
	step.Properties["taken_handle"].Description = "for a step skipped as branch_not_taken, the handle its branch took instead (absent: the default handle)"
	step.Properties["step_order"].Description = "the step's place in the run, from 1, in the order steps were planned: the run's own nodes in the graph's topological order (file order breaking ties) when the run starts, then each loop pass's and foreach item's nodes as the pass or item is planned; a step keeps its place as it runs and ends, and steps are listed in this order"
	step.Properties["ran_on"].Description = "where the step ran: the host, the process id and, for a queued run, the id of the worker that took its job; absent for a step that never started"
	verdicts := []any{"pass", "warn", "fail", "error", "skipped", "not_run"}
	nodes := s.Properties["verdict"].Properties["nodes"].Items
	nodes.Properties["verdict"].Enum = verdicts
	nodes.Properties["checks"].Items.Properties["verdict"].Enum = verdicts
	nodes.Properties["checks"].Items.Properties["verdict"].Description = "pass, warn, fail; error: the check could not be answered; skipped: its node did not run, or the pass stopped before it; not_run: its node failed, so it was not judged (the failure is what fails the run)"
	step.Properties["confidence_score"].Description = "the confidence (0..1) the node reported for its result: a _confidence directive, or the confidence number of an llm node's schema"
	describeError(s.Properties["error"], "the run's error: the first failed step's (its message prefixed with \"node <id>: \"), or one no node made (a cancel, the run's outputs); null when the run did not fail")
	describeError(step.Properties["error"], "the step's error; null when it did not fail")
	s.Properties["steps"].Type, s.Properties["steps"].Types = "array", nil
	s.Schema = "https://json-schema.org/draft/2020-12/schema"
	s.ID = SchemaID
	s.Title = "Skein run"
	s.Description = "A run with its steps: what skein run -o json, skein runs show -o json, the MCP tools and the API return."
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// describeError documents the fields of an error object (node.Error).
func describeError(e *jsonschema.Schema, what string) {
	e.Description = what
	p := e.Properties
	p["node"].Description = "the id of the node whose step failed; absent for a run's error that no node made"
	p["source"].Description = "where the error comes from: template (a template did not render), validation (a parameter's value is not valid), runtime (the node ran, or tried to, and failed)"
	p["source"].Enum = []any{node.SourceRuntime, node.SourceValidation, node.SourceTemplate}
	p["fixable"].Description = "an edit of the workflow may cure the error: the errors skein run --auto-repair repairs (template, validation, execution_failure, mcp_tool_error, an HTTP 4xx but 401, 403, 408 and 429)"
	p["code"].Description = "a stable code: template, param_type, http_404, timeout, fail_node, …"
	p["category"].Description = "the class of the error: template, validation, execution_failure, http_status, connection, timeout, cancelled, budget_exceeded, authentication, mcp_tool_error, internal"
	p["message"].Description = "what went wrong, secrets masked; a message over 2,000 characters is cut there, ending \"… (cut; whole message in blob <file>)\", and details.message_blob refers to the whole text"
	p["details"].Description = "what the kind adds: for http_status, status, body, headers (secrets masked), duration_ms and url; for a request that failed, duration_ms and url; for a template that read a key its object lacked, missing (the path read) and available_fields (that object's keys, sorted, at most 20); a failed command's exit_code and the last 2 KiB of its stderr and stdout; message_blob ($defs/blob) when the message was cut"
}

// bigValues says where big values are.
const bigValues = "A value over 64 KiB (or, once the run kept its output memory budget, over 1 KiB) is kept in a blob store — a file of the run folder, or for queued runs the shared store of the workers — and appears here as a blob reference, $defs/blob."

// blobSchema describes a blob reference (package blob).
func blobSchema() *jsonschema.Schema {
	str := func(d string) *jsonschema.Schema { return &jsonschema.Schema{Type: "string", Description: d} }
	return &jsonschema.Schema{
		Type:        "object",
		Description: "a big value kept in a blob store (a file of the run folder, blobs/<sha256>, or the shared store of queued runs), in place of the value; templates that read it get the value",
		Required:    []string{"$skein.blob"},
		Properties: map[string]*jsonschema.Schema{
			"$skein.blob": {
				Type:     "object",
				Required: []string{"sha256", "size", "type"},
				OneOf:    []*jsonschema.Schema{{Required: []string{"path"}}, {Required: []string{"store"}}},
				Properties: map[string]*jsonschema.Schema{
					"sha256": {Type: "string", Pattern: "^[0-9a-f]{64}$", Description: "SHA-256 of the content"},
					"size":   {Type: "integer", Description: "bytes of the content"},
					"type":   {Type: "string", Enum: []any{"text", "json"}, Description: "text: the blob holds the string's bytes as they are; json: a list or object, as JSON"},
					"path":   str("the file, for a blob of a run folder"),
					"store":  {Type: "string", Enum: []any{"postgres", "shared"}, Description: "the shared store that keeps the blob, for a queued run: postgres (the database's blobs table) or shared (the workers' --blobs folder)"},
				},
				AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
			},
		},
		AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}},
	}
}
