package workflow

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"time"

	"github.com/skeinhq/skein/node"
)

// Workflow is a decoded workflow file. Decode fills it; Validate checks it
// against the node kinds.
type Workflow struct {
	// kinds is the registry the workflow was validated against; its specs
	// give the nodes' roles.
	kinds *node.Registry
	// ignored are the problems Validate found in nodes that never run and
	// reported as warnings.
	ignored Diagnostics
	// File is the path the workflow was read from, used in diagnostics.
	File string
	// Source is the text it was decoded from (Decode's src, not copied):
	// what a run of it stores as the workflow's version, which may not be
	// the file's text (an editor's draft, or a file changed since).
	Source      []byte
	Version     int
	Name        string
	Description string
	Inputs      []*Input
	Secrets     []string
	// Files are the folders, besides the run's own folder, whose files
	// nodes may read to send on (an llm node's images): `files:`.
	Files      []*FilesFolder
	Defaults   Defaults
	MCPServers []*MCPServer
	LLM        []*LLMConfig
	Limits     Limits
	Evidence   *Evidence
	// Delivery, when set, POSTs the run's result somewhere when it ends.
	Delivery *Delivery
	// Record keeps a cassette of every run's interactions with the
	// outside world (`record: true`), as skein run --record does.
	Record bool
	// Trace is what the run folder holds besides run.json and
	// events.jsonl (`trace:`): TraceNodes adds each node's own files.
	// Empty means TraceRun.
	Trace   Trace
	Nodes   []*Node
	Edges   []*Edge
	Outputs []*Output

	pos   map[string]Pos // top-level keys
	index map[string]*Node
	// dir is Dir as resolved when the file dirOf names was read.
	dir, dirOf string
}

// KeyPos returns the position of a top-level key of the file (secrets,
// inputs, llm, …); the zero Pos when the file does not have it.
func (w *Workflow) KeyPos(key string) Pos { return w.pos[key] }

// FilesFolder is one folder of `files:`, as written: a relative path is
// relative to the workflow file's folder (FileRoots resolves it).
type FilesFolder struct {
	Path string
	Pos  Pos
}

// Input is a typed parameter of a workflow.
type Input struct {
	Name        string
	Type        string // string, integer, number, boolean, list, map, any
	Required    bool
	Default     any
	Description string
	Enum        []any
	Pos         Pos
}

// Defaults apply to every node that does not set the field itself.
type Defaults struct {
	Retries      int
	RetryBackoff time.Duration
	Timeout      time.Duration
	MaxVisits    int
	OnError      string
}

// Limits bound a run's spending.
type Limits struct {
	MaxTokens  int
	MaxCostUSD float64
	// MaxOutputMemory is how many bytes of output values a run keeps in
	// memory before it keeps even small ones in files; 0 means the
	// default (256 MiB).
	MaxOutputMemory int64
}

// MCPServer is a server the workflow's mcp and agent nodes may call:
// spawned over stdio (Command) or reached over streamable HTTP (URL).
type MCPServer struct {
	Name    string
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	URL     string
	Headers map[string]string
	Pos     Pos
}

// LLMConfig names a model: `default`, `vision`, `judge`, `repair` or any
// name a node refers to with `model:`.
type LLMConfig struct {
	Name        string
	Provider    string
	Model       string
	BaseURL     string
	APIKey      string
	Headers     map[string]string
	Temperature *float64
	MaxTokens   int
	// Stream, when set to false, never asks the model for a stream (for
	// a server that does not stream); nil leaves it to each node.
	Stream *bool
	// Price is what the model costs, for a model whose price Skein does
	// not know (or to override the one it knows).
	Price *Price
	Pos   Pos
}

// Price is what a model costs, in US dollars per million tokens.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
}

// Evidence is the MCP tool called after a checked node succeeds, whose image
// becomes the node's evidence.
type Evidence struct {
	Server    string
	Tool      string
	Arguments map[string]any
	Pos       Pos
}

// Trace is a trace level: what a run's folder holds (`trace:` in a
// workflow, skein run --trace).
type Trace string

// Trace levels.
const (
	// TraceRun, the default, is the fast layout: the run's run.json and
	// events.jsonl, and a node folder only for a node with files of its
	// own (artifacts, a verdict).
	TraceRun Trace = "run"
	// TraceNodes adds, in each node's folder, the node's run.json (its
	// visits) and events.jsonl (its events), written when the run ends
	// or waits.
	TraceNodes Trace = "nodes"
)

// TraceLevels are the trace levels a workflow or a command may ask for.
var TraceLevels = []string{string(TraceRun), string(TraceNodes)}

// ParseTrace reads a trace level: run or nodes.
func ParseTrace(s string) (Trace, error) {
	if !contains(TraceLevels, s) {
		return "", fmt.Errorf("trace must be run or nodes, not %q%s", s, didYouMean(s, TraceLevels))
	}
	return Trace(s), nil
}

// Traces returns the trace level of a run of w: flag, when set (a
// command's --trace wins), else the workflow's own, else TraceRun.
func (w *Workflow) Traces(flag Trace) Trace {
	switch {
	case flag != "":
		return flag
	case w != nil && w.Trace != "":
		return w.Trace
	}
	return TraceRun
}

// OnError values.
const (
	OnErrorFail     = "fail"
	OnErrorContinue = "continue"
	OnErrorRoute    = "route"
)

// Node is one step of a workflow.
type Node struct {
	ID           string
	Type         string
	Name         string
	Description  string
	Disabled     bool
	Retries      *int
	RetryBackoff *time.Duration
	Timeout      *time.Duration
	OnError      string
	MaxVisits    *int
	Checks       []*Check
	Expect       string
	// Queue names the job queue the node's attempts go to when workers
	// run the workflow (skein worker --queues); empty: the default queue.
	Queue string
	// Params holds the kind's parameters as plain values (strings, int,
	// float64, bool, []any, map[string]any), templates unrendered.
	Params map[string]any
	Pos    Pos

	raw *value // the node's map, for positions of nested values
}

// ParamPos returns the position of a parameter's value.
func (n *Node) ParamPos(name string) Pos {
	if n.raw != nil && !contains(CommonFields, name) {
		if i := n.raw.find(name); i >= 0 {
			return n.raw.keys[i].val.pos
		}
	}
	return n.Pos
}

// Check is a verification of a node's outcome.
type Check struct {
	Name   string
	Type   string
	Expr   string
	OnFail string // fail | warn
	Params map[string]any
	Pos    Pos
}

// Edge connects two nodes. On is the handle of the source it leaves from;
// "" is the default handle.
type Edge struct {
	From string
	To   string
	On   string
	Pos  Pos
	// Implicit marks the back-edge an endloop makes to its loop without
	// an edge written in the file.
	Implicit bool

	fromPos, toPos, onPos Pos
}

// Output is one named result of the run.
type Output struct {
	Name  string
	Value any // a template or a plain value
	Pos   Pos

	raw *value
}

// Ignored returns the problems the last Validate found in nodes a run
// never runs (disabled, or reached by no run) and so reported as warnings
// instead of errors.
func (w *Workflow) Ignored() Diagnostics { return w.ignored }

// Node returns the node with the given id.
func (w *Workflow) Node(id string) *Node {
	if w.index == nil {
		w.index = make(map[string]*Node, len(w.Nodes))
		for _, n := range w.Nodes {
			if _, dup := w.index[n.ID]; !dup {
				w.index[n.ID] = n
			}
		}
	}
	return w.index[id]
}

// Input returns the declared input with the given name.
func (w *Workflow) Input(name string) *Input {
	for _, in := range w.Inputs {
		if in.Name == name {
			return in
		}
	}
	return nil
}

// LLMConfig returns the named model configuration.
func (w *Workflow) LLMConfig(name string) *LLMConfig {
	for _, l := range w.LLM {
		if l.Name == name {
			return l
		}
	}
	return nil
}

// Dir is the absolute folder of the workflow file, which relative paths in
// the workflow (files:, subworkflows, an llm node's images) are relative
// to. With no file it is the working directory. A workflow read from a
// file named relatively (Decode, Load) has its folder resolved as it is
// read: a later change of the working directory does not move it.
func (w *Workflow) Dir() string {
	if w.dir != "" && w.dirOf == w.File {
		return w.dir
	}
	return absDir(w.File)
}

// absDir is the absolute folder of file (Dir).
func absDir(file string) string {
	dir := filepath.Dir(file)
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}

// FileRoots returns the folders of files: as absolute, clean paths, a
// relative one joined to the workflow's folder (Dir). Symlinks are left as
// written: the file-access policy (node.Files) resolves them on each read.
func (w *Workflow) FileRoots() []string {
	out := make([]string, 0, len(w.Files))
	for _, f := range w.Files {
		if f.Path == "" {
			continue
		}
		out = append(out, w.resolve(f.Path))
	}
	return out
}

// resolve makes a path of the workflow absolute against its folder.
func (w *Workflow) resolve(path string) string {
	if filepath.IsAbs(path) {
		return filepath.Clean(path)
	}
	return filepath.Join(w.Dir(), path)
}

// MCPServer returns the named MCP server.
func (w *Workflow) MCPServer(name string) *MCPServer {
	for _, s := range w.MCPServers {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// MarshalJSON writes a node the way it is written in a workflow file:
// common fields and parameters side by side.
func (n *Node) MarshalJSON() ([]byte, error) {
	return json.Marshal(n.Map())
}

// Map returns the node as a plain map, as written in a file.
func (n *Node) Map() map[string]any {
	m := make(map[string]any, len(n.Params)+2) // id and type; the rest are rare
	for k, v := range n.Params {
		m[k] = v
	}
	m["id"] = n.ID
	m["type"] = n.Type
	set := func(k string, v any, ok bool) {
		if ok {
			m[k] = v
		}
	}
	set("name", n.Name, n.Name != "")
	set("description", n.Description, n.Description != "")
	set("disabled", n.Disabled, n.Disabled)
	if n.Retries != nil {
		m["retries"] = *n.Retries
	}
	if n.RetryBackoff != nil {
		m["retry_backoff"] = n.RetryBackoff.String()
	}
	if n.Timeout != nil {
		m["timeout"] = n.Timeout.String()
	}
	set("on_error", n.OnError, n.OnError != "")
	if n.MaxVisits != nil {
		m["max_visits"] = *n.MaxVisits
	}
	set("expect", n.Expect, n.Expect != "")
	set("queue", n.Queue, n.Queue != "")
	if len(n.Checks) > 0 {
		cs := make([]any, len(n.Checks))
		for i, c := range n.Checks {
			cm := map[string]any{}
			for k, v := range c.Params {
				cm[k] = v
			}
			cm["type"] = c.Type
			if c.Name != "" {
				cm["name"] = c.Name
			}
			if c.Expr != "" {
				cm["expr"] = c.Expr
			}
			if c.OnFail != "" {
				cm["on_fail"] = c.OnFail
			}
			cs[i] = cm
		}
		m["checks"] = cs
	}
	return m
}
