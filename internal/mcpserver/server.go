package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skeinhq/skein/internal/confine"
	"github.com/skeinhq/skein/internal/pathscrub"
	"github.com/skeinhq/skein/internal/preflight"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/internal/rundoc"
	"github.com/skeinhq/skein/internal/runner"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// The runner's errors have the codes of its catalogue (toolError); these
// are the server's own.
const (
	codeInvalidInputs    = "invalid_inputs"
	codeInvalidArguments = "invalid_arguments" // arguments that do not match the tool's input schema
	codeInternal         = runner.CodeInternal // category internal
)

// Config configures a Server.
type Config struct {
	// Runner opens the runner the tools use, on the first call that needs
	// it: the folder (Dir) or database (DB) runs are recorded in, the
	// environment runs see (LookupEnv), and where their nodes run
	// (Placement: by default on the queue's workers with a Postgres DB).
	Runner runner.Config
	// Options are the options of every run the tools start or resume
	// (concurrency, the secrets file, private networks); its SecretsFile
	// is read by validate_workflow too.
	Options runner.Options
	// Version is the version the server tells clients.
	Version string
	// Log receives what goes wrong inside the server (the stack of a
	// handler that panicked); default nowhere.
	Log io.Writer
	// Workflows is the folder the workflow files the tools take must lie
	// in, symlinks resolved. Empty, it is the working folder once the
	// server serves HTTP (a caller over the network runs and reads no
	// other file of the machine's), and no limit over stdio, whose caller
	// is the machine's own user.
	Workflows string
}

// Server is Skein's MCP server. Its tools work through one runner, opened
// on first use, so calls may run at once and their records are committed
// together.
type Server struct {
	cfg   Config
	mcp   *sdk.Server
	calls inflight // requests being answered

	sessionCalls sessionCalls // calls in progress, by session

	mu sync.Mutex
	r  *runner.Runner

	// paths, once the server serves HTTP, rewrites the paths its errors
	// name (pathscrub): a caller over the network is told no path of the
	// machine's, only paths in the data and working folders, relative to
	// them. Over stdio the caller is the machine's user and is told all.
	paths atomic.Pointer[pathscrub.Scrubber]

	// files is the folder the workflow files its tools take must lie in
	// (checkFile): Config.Workflows, else the working folder once the
	// server serves HTTP; nil, any path is taken.
	files atomic.Pointer[string]
}

// runner returns the service's runner, opening it; with create false it
// returns nil when the folder has no database yet (nothing was run).
func (s *Server) runner(create bool) (*runner.Runner, *node.Error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		return s.r, nil
	}
	if !create && !s.hasDatabase() {
		return nil, nil
	}
	r, err := runner.Open(s.cfg.Runner)
	if err != nil {
		return nil, toolError(err)
	}
	s.r = r
	return r, nil
}

// Close refuses new requests, waits for those being answered (cancel the
// context given to New to end them) and closes the runner.
func (s *Server) Close() {
	s.drain()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.r != nil {
		_ = s.r.Close()
		s.r = nil
	}
}

// inflight counts work in progress; once closed it lets no more in.
type inflight struct {
	mu     sync.Mutex
	closed bool
	wg     sync.WaitGroup
}

// enter reports whether the work may start; then leave must follow.
func (f *inflight) enter() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return false
	}
	f.wg.Add(1)
	return true
}

func (f *inflight) leave() { f.wg.Done() }

// close lets no more work in and waits for the work in progress.
func (f *inflight) close() {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	f.wg.Wait()
}

// track counts the requests being answered, so drain can wait for them,
// and those of each session, which is not closed to make room while it
// has one (sessionCap); it cancels them when serving ends: a run in
// progress ends cancelled.
func (s *Server) track(serving context.Context) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
			if !s.calls.enter() {
				return nil, errors.New("skein mcp is shutting down")
			}
			defer s.calls.leave()
			if ss, ok := req.GetSession().(*sdk.ServerSession); ok && ss.ID() != "" {
				defer s.sessionCalls.enter(ss.ID())()
			}
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			defer context.AfterFunc(serving, cancel)()
			return next(ctx, method, req)
		}
	}
}

// drain refuses new requests and waits for those being answered.
func (s *Server) drain() { s.calls.close() }

// Tool inputs and outputs. Their JSON Schemas are derived from the types;
// the jsonschema tags are the descriptions.
type (
	validateIn struct {
		File string `json:"file,omitempty" jsonschema:"path of the workflow file (absolute, or relative to the folder skein mcp runs in)"`
		YAML string `json:"yaml,omitempty" jsonschema:"the workflow itself, as YAML text; give file or yaml"`
	}
	validateOut struct {
		Valid       bool                  `json:"valid" jsonschema:"true when there is no error (warnings allowed)"`
		Diagnostics []workflow.Diagnostic `json:"diagnostics" jsonschema:"every problem found, errors and warnings, in file order"`
	}

	runIn struct {
		File    string         `json:"file" jsonschema:"path of the workflow file (absolute, or relative to the folder skein mcp runs in)"`
		Inputs  map[string]any `json:"inputs,omitempty" jsonschema:"the workflow's inputs by name, as JSON values of their declared types"`
		Trigger string         `json:"trigger,omitempty" jsonschema:"id of the trigger node to start from (default: every entry node)"`
	}
	listRunsIn struct {
		Workflow string `json:"workflow,omitempty" jsonschema:"only runs of this workflow (its name)"`
		Status   string `json:"status,omitempty" jsonschema:"only runs with this status"`
		Limit    int    `json:"limit,omitempty" jsonschema:"most runs returned, newest first (default 20)"`
	}
	listRunsOut struct {
		Runs []runSummary `json:"runs" jsonschema:"newest first"`
	}
	runSummary struct {
		ID         string     `json:"id"`
		Workflow   string     `json:"workflow"`
		Status     string     `json:"status"`
		StartedAt  time.Time  `json:"started_at"`
		FinishedAt *time.Time `json:"finished_at"`
	}

	runIDIn struct {
		ID string `json:"id" jsonschema:"the run's id (execution_id)"`
	}
	signalIn struct {
		ID   string `json:"id" jsonschema:"the run whose wait node takes the signal"`
		Node string `json:"node" jsonschema:"the wait node (until: signal) that waits for it"`
		Data any    `json:"data,omitempty" jsonschema:"the signal's data, any JSON value: the wait node's output (default {})"`
	}
	cancelIn struct {
		ID        string `json:"id" jsonschema:"the run's id (execution_id)"`
		LetFinish bool   `json:"let_finish,omitempty" jsonschema:"let the running nodes finish (they are recorded); by default they are stopped"`
	}
	cancelOut struct {
		ExecutionID string `json:"execution_id"`
		Status      string `json:"status" jsonschema:"the run's status once the cancel took effect (cancelled), or running when its owner has not stopped it yet"`
	}

	resumeIn struct {
		ID       string `json:"id" jsonschema:"the failed, cancelled or interrupted run to continue"`
		Workflow string `json:"workflow,omitempty" jsonschema:"resume with this (edited) workflow file; its node ids must match the run's"`
	}
)

// New builds the MCP server with Skein's tools and resources. Requests
// are cancelled when serving ends (serving is done).
func New(serving context.Context, cfg Config) *Server {
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	s := &Server{cfg: cfg}
	if cfg.Workflows != "" {
		s.files.Store(&cfg.Workflows)
	}
	srv := sdk.NewServer(&sdk.Implementation{Name: "skein", Title: "Skein", Version: cfg.Version}, &sdk.ServerOptions{
		Instructions: "Skein runs workflows (YAML graphs of tools, commands and AI steps) and records every run. " +
			"Validate a workflow before running it; a run's result lists its steps; failed or cancelled runs can be resumed. " +
			"Tool errors carry a JSON object {code, category, message}.",
	})
	srv.AddReceivingMiddleware(s.scrubPaths, protocolErrors(cfg.Log), s.track(serving), argumentErrors)
	readOnly := &sdk.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)}

	AddTool(srv, &sdk.Tool{
		Name:        "validate_workflow",
		Title:       "Validate a workflow",
		Description: "Check a workflow (a file, or YAML text) without running it: its shape, node parameters, edges, loops and template references; then, as warnings, what a run here would lack (models, secrets, required inputs). Returns every problem with its line and column.",
		Annotations: readOnly,
	}, s.validate)
	AddTool(srv, &sdk.Tool{
		Name:  "run_workflow",
		Title: "Run a workflow",
		Description: "Run a workflow file to its end and return the run: status (completed, failed, cancelled), outputs, error and steps. " +
			"A failed run is a result, not an error; an invalid workflow or bad inputs are errors. The run is recorded, so get_run and resume_run find it.",
		OutputSchema: runDocSchema(),
		Annotations:  &sdk.ToolAnnotations{OpenWorldHint: new(true)},
	}, s.run)
	AddTool(srv, &sdk.Tool{
		Name:        "list_runs",
		Title:       "List runs",
		Description: "List recorded runs, newest first.",
		Annotations: readOnly,
		InputSchema: listRunsSchema(),
	}, s.listRuns)
	AddTool(srv, &sdk.Tool{
		Name:         "get_run",
		Title:        "Show a run",
		Description:  "Show a recorded run with its inputs, outputs, error and steps. Its events are the resource skein://runs/{id}/events.",
		OutputSchema: runDocSchema(),
		Annotations:  readOnly,
	}, s.getRun)
	AddTool(srv, &sdk.Tool{
		Name:  "resume_run",
		Title: "Resume a run",
		Description: "Continue a failed, cancelled or interrupted run: steps that succeeded with unchanged definitions and inputs are reused (cached), the rest run again. " +
			"Returns the run like run_workflow.",
		OutputSchema: runDocSchema(),
		Annotations:  &sdk.ToolAnnotations{OpenWorldHint: new(true)},
	}, s.resume)
	AddTool(srv, &sdk.Tool{
		Name:  "cancel_run",
		Title: "Cancel a run",
		Description: "Stop a running run, wherever it runs (this server, a skein run in a terminal, the workers of a queue): no new node starts, " +
			"running nodes are stopped (with let_finish: they finish and are recorded) and the steps that did not start are skipped. " +
			"Waits up to a minute for the run to end; the run can be resumed.",
		Annotations: &sdk.ToolAnnotations{DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, s.cancel)

	AddTool(srv, &sdk.Tool{
		Name:  "signal_run",
		Title: "Signal a waiting run",
		Description: "Send a signal (an approval, a person's answer) to a wait node with until: signal of a run, and continue the run: " +
			"data becomes the node's output. Returns the run once it ends or waits again, like run_workflow; when another process " +
			"(a skein serve on the folder) runs it, returns the run as it is and that process applies the signal.",
		OutputSchema: runDocSchema(),
		Annotations:  &sdk.ToolAnnotations{OpenWorldHint: new(true)},
	}, s.signal)

	srv.AddResourceTemplate(&sdk.ResourceTemplate{
		Name:        "run-events",
		Title:       "A run's events",
		Description: "The events of a run, one JSON object a line: execution_started, node_started, tool_call, node_finished, execution_finished and the rest.",
		MIMEType:    "application/x-ndjson",
		URITemplate: "skein://runs/{id}/events",
	}, s.readEvents)
	s.mcp = srv
	return s
}

// MCP is the SDK's server, for a program that adds tools (AddTool) or
// resources of its own beside Skein's.
func (s *Server) MCP() *sdk.Server { return s.mcp }

// nullableMaps lets every map in s be null: a nil map (a step without
// output) is encoded as null, as the run document's schema says.
func nullableMaps(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	if s.Type == "object" && s.Properties == nil {
		*s = *nullable(&jsonschema.Schema{Type: "object", AdditionalProperties: s.AdditionalProperties, Description: s.Description})
		return
	}
	for _, p := range s.Properties {
		nullableMaps(p)
	}
	nullableMaps(s.Items)
	nullableMaps(s.AdditionalProperties)
	for _, d := range s.Defs {
		nullableMaps(d)
	}
}

// AddTool adds a tool whose schemas come from In and Out. A handler's
// *node.Error becomes a tool error (isError) whose text is that error as
// JSON; it carries no structured content, which clients would check
// against the output schema.
func AddTool[In, Out any](srv *sdk.Server, t *sdk.Tool, h func(context.Context, In) (Out, *node.Error)) {
	if t.InputSchema == nil {
		schema, err := jsonschema.For[In](nil)
		if err != nil {
			panic(fmt.Sprintf("tool %s: input schema: %v", t.Name, err))
		}
		t.InputSchema = schema
	}
	if s, ok := t.InputSchema.(*jsonschema.Schema); ok {
		portable(s)
	}
	if t.OutputSchema == nil {
		schema, err := jsonschema.For[Out](nil)
		if err != nil {
			panic(fmt.Sprintf("tool %s: output schema: %v", t.Name, err))
		}
		nullableMaps(schema)
		t.OutputSchema = schema
	}
	if s, ok := t.OutputSchema.(*jsonschema.Schema); ok {
		portable(s)
	}
	// Out is erased to any so that an error result keeps no structured
	// content (the SDK would fill it with Out's zero value).
	sdk.AddTool(srv, t, func(ctx context.Context, _ *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		out, terr := h(ctx, in)
		if terr != nil {
			return toolErrorResult(terr), nil, nil
		}
		return nil, out, nil
	})
}

func toolErrorResult(e *node.Error) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: toolErrorContent(e)}
}

func toolErrorContent(e *node.Error) []sdk.Content {
	text, err := json.Marshal(e)
	if err != nil { // details that do not encode
		text, _ = json.Marshal(&node.Error{Code: e.Code, Category: e.Category, Message: e.Message})
	}
	return []sdk.Content{&sdk.TextContent{Text: string(text)}}
}

// argumentErrors gives the tool errors the SDK makes itself (arguments
// that do not match the input schema) the shape of Skein's.
func argumentErrors(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			// res may be a nil *CallToolResult (an unknown tool): it
			// must not be looked into.
			return nil, err
		}
		if r, ok := res.(*sdk.CallToolResult); ok && r != nil && r.IsError && r.GetError() != nil {
			r.Content = toolErrorContent(validationError(codeInvalidArguments, "%s", plainArguments(r.GetError().Error())))
		}
		return res, nil
	}
}

// The failures of the SDK's check of a call's arguments against the
// tool's input schema (github.com/google/jsonschema-go's words), after
// the path of the value ("validating /properties/limit: ").
// They are built on first use: a server that is never called wrongly,
// and a process that serves none, do not pay for them.
var argForms = sync.OnceValue(func() (f struct{ typ, enum, minimum, unknown, required *regexp.Regexp }) {
	f.typ = regexp.MustCompile(`^type: (.*) has type "(\w+)", want "(\w+)"$`)
	f.enum = regexp.MustCompile(`^enum: (.*) does not equal any of: \[(.*)\]$`)
	f.minimum = regexp.MustCompile(`^minimum: (\S+) is less than (\S+)$`)
	f.unknown = regexp.MustCompile(`^unexpected additional properties \[(.*)\]$`)
	f.required = regexp.MustCompile(`^required: missing properties: \[(.*)\]$`)
	return f
})

// plainArguments says a failed check of a call's arguments in the tool's
// terms — "limit must be at least 0, not -1" for "validating "arguments":
// validating root: validating /properties/limit: minimum: -1/1 is less
// than 0.000000" — or returns msg as it is when it has another form.
func plainArguments(msg string) string {
	if strings.Contains(msg, "unmarshaling arguments: ") {
		return "the arguments must be an object: a map of the argument names to their values"
	}
	what, rest := "the arguments", ""
	if i := strings.LastIndex(msg, "validating /properties/"); i >= 0 {
		name, inner, ok := strings.Cut(msg[i+len("validating /properties/"):], ": ")
		if !ok {
			return msg
		}
		what, rest = name, inner
	} else if i := strings.LastIndex(msg, "validating root: "); i >= 0 {
		rest = msg[i+len("validating root: "):]
	} else {
		return msg
	}
	number := func(s string) string {
		if f, err := strconv.ParseFloat(strings.TrimSuffix(s, "/1"), 64); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
		return s
	}
	forms := argForms()
	if m := forms.typ.FindStringSubmatch(rest); m != nil {
		return fmt.Sprintf("%s must be %s, not %s", what, jsonType(m[3]), jsonType(m[2]))
	}
	if m := forms.enum.FindStringSubmatch(rest); m != nil {
		return fmt.Sprintf("%s must be one of %s, not %q", what, strings.Join(strings.Fields(m[2]), ", "), m[1])
	}
	if m := forms.minimum.FindStringSubmatch(rest); m != nil {
		return fmt.Sprintf("%s must be at least %s, not %s", what, number(m[2]), number(m[1]))
	}
	if m := forms.unknown.FindStringSubmatch(rest); m != nil {
		return fmt.Sprintf("unknown argument %s; the tool's input schema lists the ones it takes", strings.ReplaceAll(m[1], " ", ", "))
	}
	if m := forms.required.FindStringSubmatch(rest); m != nil {
		return fmt.Sprintf("missing required argument %s", strings.ReplaceAll(m[1], " ", ", "))
	}
	return msg
}

// jsonType names a JSON Schema type with its article.
func jsonType(t string) string {
	switch t {
	case "integer", "object", "array":
		return "an " + t
	case "null":
		return "null"
	}
	return "a " + t
}

// scrubPaths rewrites the paths that tool errors and JSON-RPC errors name,
// when the server serves HTTP (Server.paths).
func (s *Server) scrubPaths(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		res, err := next(ctx, method, req)
		ps := s.paths.Load()
		if ps == nil {
			return res, err
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			msg, _ := ps.Scrub(werr.Message, "")
			err = &jsonrpc.Error{Code: werr.Code, Message: msg, Data: werr.Data}
		}
		if r, ok := res.(*sdk.CallToolResult); ok && r != nil && r.IsError {
			for i, c := range r.Content {
				tc, ok := c.(*sdk.TextContent)
				if !ok {
					continue
				}
				// The error's own strings are scrubbed, not its JSON text,
				// where an escape (\n) would join the word before a path.
				var e node.Error
				if json.Unmarshal([]byte(tc.Text), &e) == nil {
					e.Message, _ = ps.Scrub(e.Message, "")
					e.Details, _ = scrubValue(ps, e.Details).(map[string]any)
					r.Content[i] = toolErrorContent(&e)[0]
				} else {
					text, _ := ps.Scrub(tc.Text, "")
					r.Content[i] = &sdk.TextContent{Text: text, Meta: tc.Meta, Annotations: tc.Annotations}
				}
			}
		}
		return res, err
	}
}

// scrubValue scrubs the strings of a JSON value, wherever they are.
func scrubValue(ps *pathscrub.Scrubber, v any) any {
	switch v := v.(type) {
	case string:
		out, _ := ps.Scrub(v, "")
		return out
	case map[string]any:
		for k, x := range v {
			v[k] = scrubValue(ps, x)
		}
	case []any:
		for i, x := range v {
			v[i] = scrubValue(ps, x)
		}
	}
	return v
}

// protocolErrors keeps one request from ending the server: a handler that
// panics is answered with an internal error (its stack goes to log), and
// an error that is not a JSON-RPC error gets the internal error's code.
// A tools/call without a tool name is invalid params.
func protocolErrors(log io.Writer) sdk.Middleware {
	return func(next sdk.MethodHandler) sdk.MethodHandler {
		return func(ctx context.Context, method string, req sdk.Request) (res sdk.Result, err error) {
			defer func() {
				if v := recover(); v != nil {
					fmt.Fprintf(log, "skein mcp: answering %s: panic: %v\n%s", method, v, debug.Stack())
					res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: fmt.Sprintf("internal error answering %s: %v", method, v)}
				}
			}()
			if r, ok := req.(*sdk.CallToolRequest); ok && (r.Params == nil || r.Params.Name == "") {
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call needs params.name, the tool to call (tools/list lists them)"}
			}
			res, err = next(ctx, method, req)
			var werr *jsonrpc.Error
			if err != nil && !errors.As(err, &werr) {
				err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: err.Error()}
			}
			return res, err
		}
	}
}

func listRunsSchema() *jsonschema.Schema {
	s, err := jsonschema.For[listRunsIn](nil)
	if err != nil {
		panic(fmt.Sprintf("list_runs: input schema: %v", err))
	}
	s.Properties["status"].Enum = []any{
		record.RunPending, record.RunRunning, record.RunWaiting,
		record.RunCompleted, record.RunFailed, record.RunCancelled,
	}
	s.Properties["limit"].Minimum = new(0.0)
	return s
}

func validationError(code, format string, args ...any) *node.Error {
	return &node.Error{Code: code, Category: node.CategoryValidation, Message: fmt.Sprintf(format, args...)}
}

// toolError renders a runner error as a tool error: its code is the
// runner's catalogue's (runner.Classify), the same as from the CLI and
// the HTTP API; its category is validation unless the error is internal
// (or the database cannot be reached).
func toolError(err error) *node.Error {
	fe := runner.Classify(err)
	e := &node.Error{Code: fe.Code, Category: node.CategoryValidation, Message: fe.Msg}
	var ne *node.Error
	switch {
	case errors.As(err, &ne):
		e.Category, e.Details = ne.Category, ne.Details
	case fe.Class == runner.ClassInternal, fe.Class == runner.ClassUnavailable, fe.Class == runner.ClassBusy:
		e.Category = node.CategoryInternal
	}
	switch {
	case len(fe.Diagnostics) > 0:
		e.Details = map[string]any{"diagnostics": fe.Diagnostics}
	case fe.RunID != "":
		e.Details = map[string]any{"execution_id": fe.RunID}
	}
	return e
}

// runDoc is the tool result of an execution: a run that ended, whatever
// its status, is a result; one that could not be recorded is an error.
func (s *Server) runDoc(ctx context.Context, r *runner.Runner, res *runner.Result, err error) (runner.RunDoc, *node.Error) {
	if err != nil {
		return runner.RunDoc{}, toolError(err)
	}
	doc := s.answered(r.Doc(ctx, res))
	if res.Err != nil {
		terr := toolError(res.Err)
		terr.Details = map[string]any{"execution_id": doc.ExecutionID}
		return doc, terr
	}
	return doc, nil
}

// answered is a run document as a tool gives it: over HTTP, its workflow
// file, run folder and big values' files named as errors name paths
// (pathscrub).
func (s *Server) answered(doc *runner.RunDoc) runner.RunDoc {
	if ps := s.paths.Load(); ps != nil {
		doc.Scrub(ps)
	}
	return *doc
}

func (s *Server) validate(_ context.Context, in validateIn) (validateOut, *node.Error) {
	file := in.File
	switch {
	case (in.File == "") == (in.YAML == ""):
		return validateOut{}, validationError(codeInvalidArguments, "give either file or yaml")
	case in.File != "":
		if terr := s.checkFile(in.File); terr != nil {
			return validateOut{}, terr
		}
	case in.YAML != "":
		tmp, err := os.MkdirTemp("", "skein-mcp-")
		if err != nil {
			return validateOut{}, &node.Error{Code: codeInternal, Category: node.CategoryInternal, Message: err.Error()}
		}
		defer os.RemoveAll(tmp)
		file = filepath.Join(tmp, "inline.yaml")
		if err := os.WriteFile(file, []byte(in.YAML), 0o600); err != nil {
			return validateOut{}, &node.Error{Code: codeInternal, Category: node.CategoryInternal, Message: err.Error()}
		}
	}
	// What would stop a run here comes as warnings, as skein validate
	// gives them.
	_, ds, err := preflight.Validate(file, node.Default, preflight.Request{LookupEnv: s.cfg.Runner.LookupEnv, SecretsFile: s.cfg.Options.SecretsFile})
	if err != nil {
		return validateOut{}, toolError(err)
	}
	out := validateOut{Valid: !ds.HasErrors(), Diagnostics: make([]workflow.Diagnostic, 0, len(ds))}
	for _, d := range ds {
		if in.YAML != "" { // the temporary folder is gone when the caller reads this
			d.File = "inline.yaml"
			d.Message = strings.ReplaceAll(d.Message, file, "inline.yaml")
		}
		if ps := s.paths.Load(); ps != nil { // over HTTP: no path of the server's
			d.File, _ = ps.Scrub(d.File, "")
			d.Message, _ = ps.Scrub(d.Message, "")
		}
		out.Diagnostics = append(out.Diagnostics, d)
	}
	return out, nil
}

func (s *Server) run(ctx context.Context, in runIn) (runner.RunDoc, *node.Error) {
	if terr := s.checkFile(in.File); terr != nil {
		return runner.RunDoc{}, terr
	}
	r, terr := s.runner(true)
	if terr != nil {
		return runner.RunDoc{}, terr
	}
	w, err := r.Load(in.File)
	if err != nil {
		return runner.RunDoc{}, toolError(err)
	}
	inputs, err := w.ResolveInputs(in.Inputs)
	if err != nil {
		return runner.RunDoc{}, validationError(codeInvalidInputs, "%v", err)
	}
	res, err := r.Start(ctx, runner.StartRequest{Workflow: w, Inputs: inputs, Trigger: in.Trigger, Options: s.options()})
	return s.runDoc(ctx, r, res, err)
}

// options are the options of the runs the tools start.
func (s *Server) options() runner.Options {
	o := s.cfg.Options
	o.Source = record.SourceMCP
	return o
}

// checkFile refuses a call without a workflow file and, over HTTP, one
// that leads outside the folder the server serves (Server.files). A file
// that does not exist is the runner's to refuse (invalid_workflow, as
// skein run does).
func (s *Server) checkFile(file string) *node.Error {
	if file == "" {
		return validationError(codeInvalidArguments, "file is required")
	}
	if root := s.files.Load(); root != nil {
		// A relative path is the working folder's, as the runner reads it.
		abs, err := filepath.Abs(file)
		if err != nil {
			return validationError(codeInvalidArguments, "file %q: %v", file, err)
		}
		if _, err := confine.Resolve(abs, *root); errors.Is(err, confine.ErrEscapes) {
			return validationError(codeInvalidArguments,
				"file %q is outside %s: this server runs and validates only the workflow files in it (skein mcp --workflows names another folder)", file, *root)
		}
	}
	return nil
}

func (s *Server) listRuns(ctx context.Context, in listRunsIn) (listRunsOut, *node.Error) {
	out := listRunsOut{Runs: []runSummary{}}
	r, terr := s.runner(false)
	if terr != nil || r == nil {
		return out, terr
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 20
	}
	runs, err := r.List(ctx, runner.ListRequest{Workflow: in.Workflow, Status: in.Status, Limit: limit})
	if err != nil {
		return out, toolError(err)
	}
	for _, run := range runs {
		out.Runs = append(out.Runs, runSummary{ID: run.ID, Workflow: run.Workflow, Status: string(run.Status), StartedAt: run.StartedAt, FinishedAt: run.FinishedAt})
	}
	return out, nil
}

func (s *Server) getRun(ctx context.Context, in runIDIn) (runner.RunDoc, *node.Error) {
	r, terr := s.findRun(ctx, in.ID)
	if terr != nil {
		return runner.RunDoc{}, terr
	}
	doc, err := r.Get(ctx, in.ID)
	if err != nil {
		return runner.RunDoc{}, toolError(err)
	}
	return s.answered(doc), nil
}

func (s *Server) resume(ctx context.Context, in resumeIn) (runner.RunDoc, *node.Error) {
	r, terr := s.findRun(ctx, in.ID)
	if terr != nil {
		return runner.RunDoc{}, terr
	}
	if in.Workflow != "" {
		if terr := s.checkFile(in.Workflow); terr != nil {
			return runner.RunDoc{}, terr
		}
	}
	res, err := r.Resume(ctx, runner.ResumeRequest{RunID: in.ID, WorkflowFile: in.Workflow, Options: s.options()})
	return s.runDoc(ctx, r, res, err)
}

func (s *Server) cancel(ctx context.Context, in cancelIn) (cancelOut, *node.Error) {
	r, terr := s.findRun(ctx, in.ID)
	if terr != nil {
		return cancelOut{}, terr
	}
	run, err := r.Cancel(ctx, runner.CancelRequest{RunID: in.ID, Wait: time.Minute, LetFinish: in.LetFinish})
	if err != nil {
		return cancelOut{}, toolError(err)
	}
	return cancelOut{ExecutionID: run.ID, Status: string(run.Status)}, nil
}

func (s *Server) signal(ctx context.Context, in signalIn) (runner.RunDoc, *node.Error) {
	r, terr := s.findRun(ctx, in.ID)
	if terr != nil {
		return runner.RunDoc{}, terr
	}
	if in.Node == "" {
		return runner.RunDoc{}, validationError(codeInvalidArguments, "node is required: the wait node that takes the signal")
	}
	data := in.Data
	if data == nil {
		data = map[string]any{}
	}
	sig, err := r.Signal(ctx, runner.SignalRequest{RunID: in.ID, Node: in.Node, Data: data})
	if err != nil {
		return runner.RunDoc{}, toolError(err)
	}
	if sig.Resume != "" {
		res, err := r.Resume(ctx, runner.ResumeRequest{RunID: sig.Resume, Options: s.options()})
		var owned *runner.OwnedError
		if !errors.As(err, &owned) {
			return s.runDoc(ctx, r, res, err)
		}
		// Another process resumed it first: it applies the signal.
	}
	doc, err := r.Get(ctx, sig.Run.ID)
	if err != nil {
		return runner.RunDoc{}, toolError(err)
	}
	return s.answered(doc), nil
}

// readEvents answers skein://runs/{id}/events with the run's events, one
// JSON object a line, as `skein runs events ID` prints them.
func (s *Server) readEvents(ctx context.Context, req *sdk.ReadResourceRequest) (*sdk.ReadResourceResult, error) {
	uri := req.Params.URI
	id, ok := strings.CutPrefix(uri, "skein://runs/")
	if ok {
		id, ok = strings.CutSuffix(id, "/events")
	}
	if !ok || id == "" || strings.Contains(id, "/") {
		return nil, sdk.ResourceNotFoundError(uri)
	}
	r, terr := s.findRun(ctx, id)
	if terr != nil {
		if terr.Code == runner.CodeNotFound {
			return nil, sdk.ResourceNotFoundError(uri)
		}
		return nil, terr
	}
	evs, _, err := r.Events(ctx, id, 0, 0)
	if err != nil {
		return nil, toolError(err)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	for _, ev := range evs {
		if err := enc.Encode(rundoc.EventLine(ev)); err != nil {
			return nil, err
		}
	}
	return &sdk.ReadResourceResult{Contents: []*sdk.ResourceContents{{URI: uri, MIMEType: "application/x-ndjson", Text: b.String()}}}, nil
}

func (s *Server) hasDatabase() bool {
	return runner.HasDatabase(s.cfg.Runner)
}

// findRun returns the runner, or a tool error unless the run is recorded.
func (s *Server) findRun(ctx context.Context, id string) (*runner.Runner, *node.Error) {
	if id == "" {
		return nil, validationError(codeInvalidArguments, "id is required")
	}
	notFound := toolError(runner.ErrNotFound)
	notFound.Message = fmt.Sprintf("no run %q in %s; list_runs shows the runs", id, s.cfg.Runner.Dir)
	r, terr := s.runner(false)
	if terr != nil {
		return nil, terr
	}
	if r == nil {
		return nil, notFound
	}
	// Whether it exists: its record, not its document with every step.
	if _, err := r.Lookup(ctx, id); errors.Is(err, runner.ErrNotFound) {
		return nil, notFound
	} else if err != nil {
		return nil, toolError(err)
	}
	return r, nil
}
