// Package check is the evaluation pass that runs after a run has ended
// (DESIGN §4): it answers each node's checks and `expect:` outcome and
// gathers the answers into a verdict.
//
// Evaluate walks the checked nodes in the order their last visit ran. Each
// node is judged once, on its last visit: checks judge nodes that
// completed. A node whose last visit failed has its checks "not_run" (its
// failure is what fails the run); one whose last visit was skipped, or
// that never ran, has them "skipped", with the reason.
//
// Deterministic check types are answered here, without a model:
//
//	expr          a bare expression over the node outputs (the node's own output
//	              under its id, every other node's latest output), which must be
//	              a bool
//	contains      `value` is in the target: a substring of a string, an element
//	not_contains  of a list, a substring of the JSON text of anything else
//	regex         `pattern` matches the target (its JSON text unless a string)
//	json_schema   the target is valid against `schema` (no remote references)
//	http_status   output.status is `status`: a code, a list of codes, or a
//	              class such as "2xx"
//	file_exists   `path` exists; a relative path is relative to the
//	              workflow file's folder
//
// The target of contains, not_contains, regex and json_schema is `target`, a
// dotted path into the node's output (`body.items`, `stdout`, `items.0.id`),
// or the whole output when it is not given. The output a check sees is the
// node's output without the `success` field the scheduler adds.
//
// Screen checks (text_present, text_absent, template_found, window_title) and
// `expect:` go to a Judge, in one call per node, with the evidence: the
// node's output, its last 20 tool_call and tool_result events of the judged
// visit, and its image paths. Every check asked about must come back with a
// verdict of pass or fail; a reply that is not (or a failed call) is asked
// again once for the checks still unanswered, and the checks that are then
// still unanswered end as "error", never "pass". Without a Judge they end as
// "error" too.
//
// `on_fail: warn` turns a check's "fail" into "warn", and keeps its "error"
// from failing the run. The first hard failure (a "fail", or an "error" of a
// check with on_fail fail) stops the pass after its node: the nodes after it
// are "skipped", with "evaluation stopped at node X". The run's status is
// FAILED when a check failed hard, else INCOMPLETE when the run did not
// complete (it failed, was cancelled or waits: the checks of the nodes that
// did not run are skipped) or a check was not run (its node failed, with
// on_error letting the run go on), else PASSED WITH WARNINGS when one warned (or erred softly),
// else PASSED; it is empty when the workflow has no checks and no expect.
//
// Write stores the verdict as <run>/verdict.json and <run>/<node>/verdict.json.
// Bar and Details render it for a terminal.
package check
