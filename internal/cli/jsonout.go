package cli

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/spf13/cobra"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/flowtest"
	"github.com/skeinhq/skein/internal/plainjson"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// What the commands print with -o json. Each shape is published as a JSON
// Schema in schema/ (Schemas makes them; a test keeps the files current
// and checks every command's output against them). A run is always the
// one run document, runner.RunDoc (schema/run.schema.json).

// Error codes of errorDoc: stable, for programs to branch on. The
// runner's errors have the codes of its catalogue (runner.Classify), the
// same over the HTTP API and the MCP server; these are the CLI's own.
const (
	codeUsage       = runner.CodeUsage           // how skein was called: a flag, an argument, an input
	codeInvalid     = runner.CodeInvalidWorkflow // details.diagnostics holds every problem
	codeInvalidTest = "invalid_test"             // a test file skein test cannot run; details: file, line
)

// errorDoc is what a command run with -o json prints on stdout when it
// fails before it has anything else to print: one object, with the exit
// code of the same error in text.
type errorDoc struct {
	Error *node.Error `json:"error"`
}

// validateDoc is what skein validate -o json prints (and the MCP tool
// validate_workflow returns).
type validateDoc struct {
	Valid       bool                  `json:"valid" jsonschema:"true when no file has an error (warnings allowed)"`
	Diagnostics []workflow.Diagnostic `json:"diagnostics" jsonschema:"every problem found, errors and warnings, by file and position"`
}

// runListItem is one run in skein runs list -o json: the run document's
// fields that describe a run without its steps.
type runListItem struct {
	ExecutionID string     `json:"execution_id"`
	Workflow    string     `json:"workflow"`
	Status      string     `json:"status"`
	ParentID    string     `json:"parent_id,omitempty" jsonschema:"the run that started this one (a subworkflow), when there is one"`
	StartedAt   time.Time  `json:"started_at"`
	FinishedAt  *time.Time `json:"finished_at"`
	DurationMS  int64      `json:"duration_ms" jsonschema:"from start to end; 0 while the run has not ended"`
	WakeAt      *time.Time `json:"wake_at,omitempty" jsonschema:"for a waiting run, the earliest wake-up time of its waits"`
}

func listItem(r *record.Run) runListItem {
	it := runListItem{ExecutionID: r.ID, Workflow: r.Workflow, Status: string(r.Status), ParentID: r.ParentID,
		StartedAt: r.StartedAt, FinishedAt: r.FinishedAt, WakeAt: r.WakeAt}
	if r.FinishedAt != nil {
		it.DurationMS = r.FinishedAt.Sub(r.StartedAt).Milliseconds()
	}
	return it
}

// cancelDoc is what skein cancel -o json prints.
type cancelDoc struct {
	ExecutionID string `json:"execution_id"`
	Status      string `json:"status" jsonschema:"the run's status after the request: cancelled, or running while its owner stops it"`
}

// signalDoc is what skein signal -o json prints when another process (the
// run's owner) applies the signal; when this process resumes the run it
// prints the run document.
type signalDoc struct {
	ExecutionID string    `json:"execution_id"`
	Node        string    `json:"node"`
	Visit       int       `json:"visit"`
	Seq         int64     `json:"seq"`
	SignaledAt  time.Time `json:"signaled_at"`
	Status      string    `json:"status"`
	AppliedBy   string    `json:"applied_by" jsonschema:"the process that applies the signal"`
}

// planDoc is what skein resume --plan -o json prints.
type planDoc struct {
	ExecutionID string        `json:"execution_id"`
	File        string        `json:"file" jsonschema:"the workflow file the resume would use"`
	Nodes       []planNodeDoc `json:"nodes"`
}

type planNodeDoc struct {
	Node  string `json:"node"`
	Visit int    `json:"visit,omitempty" jsonschema:"the step's visit of the node (from 1); absent with action depends, which speaks of the node's steps after a node that runs again"`
	// Label names the step as the progress display does: body (pass 2),
	// each[1], poll #2, call1/inner for a child run's step.
	Label  string `json:"label" jsonschema:"the step as the progress display names it: body (pass 2), each[1], poll #2; child/inner for a step of a subworkflow node's child run"`
	Run    string `json:"run,omitempty" jsonschema:"the child run the step belongs to, for a step of a subworkflow node's child run"`
	Action string `json:"action" jsonschema:"reuse: its recorded output (or, for a trigger, the run's inputs) is used again; run: it runs again; skip: it is skipped, as the recorded data decide; depends: it comes after a node that runs again, whose result decides"`
	Reason string `json:"reason"`
}

// pruneDoc is what skein runs prune -o json prints.
type pruneDoc struct {
	DryRun  bool          `json:"dry_run" jsonschema:"true when nothing was deleted"`
	Runs    []runListItem `json:"runs" jsonschema:"the runs deleted, or that would be"`
	Folders int           `json:"folders" jsonschema:"run folders deleted"`
}

// tokenCreateDoc is what skein token create -o json prints.
type tokenCreateDoc struct {
	Token string `json:"token" jsonschema:"the token's text, shown this once: the database keeps its SHA-256 only"`
	tokenDoc
}

// tokenListDoc is what skein token list -o json prints.
type tokenListDoc struct {
	Tokens []tokenDoc `json:"tokens" jsonschema:"oldest first"`
}

type tokenDoc struct {
	ID        string    `json:"id" jsonschema:"the part of the token after skn_ and before the next underscore"`
	Name      string    `json:"name"`
	Scope     string    `json:"scope" jsonschema:"read, run, edit or admin"`
	CreatedAt time.Time `json:"created_at"`
}

// errorOf describes err for errorDoc, and says which exit code goes with
// it. The command line's own errors (flags, test files) are told apart
// here; every other error is the runner's catalogue's (runner.Classify),
// whose class decides the exit code: 2 when asking again the same way
// cannot work (invalid, not found, conflict), else 1.
func errorOf(err error) (int, *node.Error) {
	var cliUse *usageError
	var de *diagnosticsError
	var te *flowtest.Error
	val := func(code string) *node.Error {
		return &node.Error{Code: code, Category: node.CategoryValidation, Message: err.Error()}
	}
	switch {
	case errors.As(err, &de):
		e := val(codeInvalid)
		e.Message = problemsSummary(de.ds)
		e.Details = map[string]any{"diagnostics": de.ds}
		e.Source, e.Fixable = node.SourceValidation, true // what --auto-repair repairs
		return ExitInvalid, e
	case errors.As(err, &te):
		e := val(codeInvalidTest)
		e.Details = map[string]any{"file": te.File, "line": te.Line}
		return ExitInvalid, e
	case errors.As(err, &cliUse):
		return ExitInvalid, val(codeUsage)
	}
	fe := runner.Classify(err)
	e := &node.Error{Code: fe.Code, Category: node.CategoryValidation, Message: fe.Msg}
	code := ExitInvalid
	switch fe.Class {
	case runner.ClassInvalid, runner.ClassNotFound, runner.ClassConflict:
	default:
		code = ExitFailed
		if fe.Class != runner.ClassOwned {
			e.Category = node.CategoryInternal
		}
	}
	var amb *runner.AmbiguousError
	var ne *node.Error
	switch {
	case fe.Code == runner.CodeInvalidWorkflow:
		e.Message = fe.Msg
		if len(fe.Diagnostics) > 0 {
			e.Message = problemsSummary(fe.Diagnostics)
		}
		e.Details = map[string]any{"diagnostics": fe.Diagnostics}
		e.Source, e.Fixable = node.SourceValidation, true // what --auto-repair repairs
	case errors.As(err, &amb):
		matches := make([]runListItem, 0, len(amb.Matches))
		for _, r := range amb.Matches {
			matches = append(matches, listItem(r))
		}
		e.Details = map[string]any{"prefix": amb.Prefix, "total": amb.Total, "matches": matches}
	case errors.As(err, &ne):
		e.Category, e.Details = ne.Category, ne.Details
		e.Node, e.Source, e.Fixable = ne.Node, ne.Source, ne.Fixable
		if outer := err.Error(); strings.Contains(outer, ne.Message) {
			e.Message = outer // what the command says around it too, as stderr has it
		}
	}
	return code, e
}

// problemsSummary is the one-line message of a workflow's problems.
func problemsSummary(ds workflow.Diagnostics) string {
	errs := ds.Errors()
	file := ""
	if len(errs) > 0 {
		file = errs[0].File
	}
	noun := "errors"
	if len(errs) == 1 {
		noun = "error"
	}
	return fmt.Sprintf("%s is not a valid workflow: %d %s (details.diagnostics lists them)", file, len(errs), noun)
}

// wantsJSON reports whether the command line asked for -o json: the
// parsed flag when the command got that far, else the arguments as
// written (a usage error stops flag parsing before -o is read).
func wantsJSON(cmd *cobra.Command, args []string) bool {
	if cmd != nil {
		if f := cmd.Flags().Lookup("output"); f != nil && f.Changed {
			return f.Value.String() == "json"
		}
	}
	for i, a := range args {
		switch a {
		case "--":
			return false
		case "-o", "--output":
			if i+1 < len(args) && args[i+1] == "json" {
				return true
			}
		case "-ojson", "-o=json", "--output=json":
			return true
		}
	}
	return false
}

// countingWriter remembers whether anything was written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// writeJSON prints v as indented JSON. A run document is written a step at
// a time (rundoc.Doc.WriteJSON) and indented on its way: a run of 10,000
// steps is ~12 MB of text, and encoding and then indenting it whole cost
// skein run -o json a third of its time.
func writeJSON(w io.Writer, v any) {
	if d, ok := v.(*rundoc.Doc); ok {
		out := bufio.NewWriterSize(w, 64<<10)
		if d.WriteJSON(plainjson.NewIndenter(out, "  ")) == nil {
			_ = out.Flush()
		}
		return
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// SchemaBase is where the schemas of schema/ say they live ($id).
const SchemaBase = "https://skein.dev/schema/"

// outputSchema is one published schema: its file in schema/, what prints
// it, and how to make it.
type outputSchema struct {
	File        string
	Title       string
	Description string
	make        func() (*jsonschema.Schema, error)
}

func schemaOf[T any]() func() (*jsonschema.Schema, error) {
	return func() (*jsonschema.Schema, error) { return jsonschema.For[T](nil) }
}

// outputSchemas are the schemas of -o json besides the run document's.
var outputSchemas = []outputSchema{
	{"error.schema.json", "Skein error", "What every command run with -o json prints on stdout when it fails before it has a result (exit code 1 or 2): one object whose error has a stable code (usage, invalid_workflow, invalid_test, not_found, ambiguous_run_id, completed, not_running, not_waiting, run_owned, lease_lost, run_exists, database_locked, database_invalid, unavailable, internal — the codes of the HTTP API's problems and the MCP server's tool errors for the same errors), a category, a message and details (invalid_workflow: diagnostics, each as in validate.schema.json; invalid_test: the test file and line).", errorSchema},
	{"validate.schema.json", "Skein validate", "What skein validate -o json prints: every problem of the files given, errors and warnings.", schemaOf[validateDoc]()},
	{"runs-list.schema.json", "Skein runs list", "What skein runs list -o json prints: runs, newest first.", listSchema},
	{"verdict.schema.json", "Skein verdict", "What skein runs verdict -o json and skein check -o json print: the run's verdict, check by check, or null when its workflow has no checks.", verdictSchema},
	{"event.schema.json", "Skein event", "One line of skein runs events (JSON lines): an event of a run.", schemaOf[rundoc.Event]()},
	{"cancel.schema.json", "Skein cancel", "What skein cancel -o json prints.", schemaOf[cancelDoc]()},
	{"signal.schema.json", "Skein signal", "What skein signal -o json prints when the run's owner, another process, applies the signal (when skein signal resumes the run itself it prints the run document, run.schema.json).", schemaOf[signalDoc]()},
	{"resume-plan.schema.json", "Skein resume plan", "What skein resume --plan -o json prints: what a resume would reuse and run again.", schemaOf[planDoc]()},
	{"prune.schema.json", "Skein runs prune", "What skein runs prune -o json prints.", schemaOf[pruneDoc]()},
	{"token-create.schema.json", "Skein token create", "What skein token create -o json prints: the new token, its text shown this once.", schemaOf[tokenCreateDoc]()},
	{"version.schema.json", "Skein version", "What skein version -o json prints.", schemaOf[versionDoc]()},
	{"migrate.schema.json", "Skein migrate", "What skein migrate -o json prints: the database, its schema version before and after, and the migrations applied.", schemaOf[migrateDoc]()},
	{"test.schema.json", "Skein test", "What skein test -o json prints: how each case of the test files went, with every expectation it missed.", schemaOf[flowtest.Report]()},
	{"lock-update.schema.json", "Skein lock update", "What skein lock update -o json prints: the servers whose tools the lock file now pins, with what changed, and the servers it dropped.", schemaOf[runner.LockResult]()},
	{"replay.schema.json", "Skein replay", "What skein replay -o json prints: the replay's run, the steps that diverged from the recorded run and the requests the cassette had no answer for.", replaySchema},
	{"token-list.schema.json", "Skein token list", "What skein token list -o json prints: the API tokens of the folder (never their text).", schemaOf[tokenListDoc]()},
}

func errorSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[errorDoc](nil)
	if err != nil {
		return nil, err
	}
	e := s.Properties["error"]
	e.Types, e.Type = nil, "object"
	// Errors of a node (llm_config, …) keep their own codes when they
	// stop a command before it has a run, so the codes are not an enum.
	e.Properties["details"].Properties = map[string]*jsonschema.Schema{
		"diagnostics": {Type: "array", Description: "invalid_workflow: every problem, as skein validate gives them",
			Items: &jsonschema.Schema{Ref: "validate.schema.json#/properties/diagnostics/items"}},
		"matches": {Type: "array", Description: "ambiguous_run_id: the runs the prefix begins, newest first",
			Items: &jsonschema.Schema{Ref: "runs-list.schema.json#/items"}},
	}
	e.Properties["details"].Properties["file"] = &jsonschema.Schema{Type: "string", Description: "invalid_test: the test file"}
	e.Properties["details"].Properties["line"] = &jsonschema.Schema{Type: "integer", Description: "invalid_test: the line of the problem, 0 when it is the whole file"}
	e.Properties["code"].Description = "usage, invalid_workflow, invalid_test, not_found, ambiguous_run_id, completed, not_running, not_waiting, run_owned, lease_lost, run_exists, database_locked, database_invalid, unavailable, internal; or the code of the node error that stopped the command"
	e.Properties["node"].Description = "the node of the node error that stopped the command, when there is one"
	e.Properties["source"].Description = "validation for invalid_workflow; a node error's own (runtime, validation, template); absent otherwise"
	e.Properties["fixable"].Description = "true when an edit of the workflow may cure the error (invalid_workflow, and node errors skein run --auto-repair repairs)"
	return s, nil
}

func listSchema() (*jsonschema.Schema, error) {
	item, err := jsonschema.For[runListItem](nil)
	if err != nil {
		return nil, err
	}
	item.Properties["status"].Enum = runStatusesAny()
	return &jsonschema.Schema{Type: "array", Items: item}, nil
}

func verdictSchema() (*jsonschema.Schema, error) {
	s, err := jsonschema.For[check.RunVerdict](nil)
	if err != nil {
		return nil, err
	}
	s.Types, s.Type = []string{"null", "object"}, ""
	return s, nil
}

func runStatusesAny() []any {
	out := make([]any, len(runStatuses))
	for i, s := range runStatuses {
		out[i] = s
	}
	return out
}

// Schemas returns the JSON Schemas of what the commands print with -o
// json besides the run document (rundoc.Schema), by file name in
// schema/.
func Schemas() (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, o := range outputSchemas {
		s, err := o.make()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		s.Schema = "https://json-schema.org/draft/2020-12/schema"
		s.ID = SchemaBase + o.File
		s.Title = o.Title
		s.Description = o.Description
		b, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.File, err)
		}
		out[o.File] = append(b, '\n')
	}
	return out, nil
}
