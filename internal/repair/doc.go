// Package repair is `skein run --auto-repair` (DESIGN §4): the loop that runs
// a workflow and repairs it, and its model side — it decides which failures a
// model may fix, tells the model about them, reads the corrected workflow it
// returns, and describes what changed.
//
// Run is the loop: it drives the application layer through the small Runs
// interface (execute a workflow, go on with a failed run, keep the run's
// totals), asks the repair model for a corrected workflow, shows what
// changed and resumes the run with it, and saves the repaired file once
// the run completes. The pieces, in the order the loop uses them:
//
//   - FromDiagnostics turns validation errors into Problems; Assess reads a
//     finished run into Problems (its failed steps), Warnings (API business
//     errors in the outputs of http and mcp steps that succeeded) and, when a
//     failure must not be repaired, the reason.
//   - Repairable is the rule: template, validation and execution_failure
//     errors, a 4xx http_status other than 401, 403, 408 and 429, and
//     mcp_tool_error are repaired; authentication and budget errors never,
//     nor timeouts, connection failures and server errors, which a retry
//     rather than an edit may cure.
//   - BusinessError finds `"ok": false`, `"success": false`, a `"status"`
//     of 400 or more and a GraphQL `errors` list in an output (package
//     apierr, which the http kind also uses to warn as it runs). Those are warnings on the node, not
//     repaired: the request was well formed and the API said no.
//   - Signature normalises problems (ids, times, numbers and paths removed)
//     so the loop can stop when the same error comes back after a repair.
//   - Prompt builds the conversation (workflow, problems with status, body
//     and the fields upstream outputs offer, the run's steps, the kinds in
//     use); Ask sends it through llm.ChatJSON and returns the workflow the
//     model wrote.
//   - Diff lists the changes between two workflows per node and field, with
//     added and removed nodes and edges, for the `[repaired]` lines and the
//     run's JSON output.
package repair
