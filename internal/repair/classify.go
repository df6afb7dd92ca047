package repair

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/skeinhq/skein/internal/apierr"
	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/internal/record"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Phase is when a problem was found.
type Phase string

// Phases. Each has its own budget of attempts.
const (
	PhaseValidation Phase = "validation"
	PhaseRuntime    Phase = "runtime"
)

// MaxBody is how much of a response body a Problem keeps.
const MaxBody = 2 << 10

// Problem is one error the repair model is asked to fix.
type Problem struct {
	Phase    Phase  `json:"phase"`
	Node     string `json:"node,omitempty"`
	Type     string `json:"type,omitempty"` // the node's kind
	Category string `json:"category"`
	Code     string `json:"code,omitempty"`
	Message  string `json:"message"`
	// Path, Line and Col place a validation error in the file.
	Path string `json:"path,omitempty"`
	Line int    `json:"line,omitempty"`
	Col  int    `json:"col,omitempty"`
	// Status and Body are the HTTP status and the start of the response
	// body of an http_status error.
	Status int    `json:"status,omitempty"`
	Body   string `json:"body,omitempty"`
	// Stderr and Stdout are the ends of a failed command's standard
	// error and output (at most MaxBody bytes each): what the command
	// said was wrong (many tools say it on stdout).
	Stderr string `json:"stderr,omitempty"`
	Stdout string `json:"stdout,omitempty"`
	// Missing and AvailableFields are, for a template that read a key its
	// object lacked, the path it read and that object's keys.
	Missing         string   `json:"missing,omitempty"`
	AvailableFields []string `json:"available_fields,omitempty"`
	// Params are the failed step's parameters as rendered for the run.
	Params map[string]any `json:"params,omitempty"`
	// Upstream lists the output fields the nodes before this one offer.
	Upstream []Fields `json:"upstream,omitempty"`
}

// Fields are the output fields one node offers to the nodes after it: the
// fields of its output when it ran, else the ports its kind declares.
type Fields struct {
	Node   string   `json:"node"`
	Type   string   `json:"type"`
	Fields []string `json:"fields"`
}

// Warning is an API business error found in a successful step's output.
type Warning struct {
	Node    string `json:"node"`
	Visit   int    `json:"visit"`
	Message string `json:"message"`
}

// Assessment is what a finished run means for repair.
type Assessment struct {
	// Problems are the run's failures, when every one may be repaired.
	Problems []Problem
	// Warnings are business errors in the outputs of http and mcp steps
	// that succeeded.
	Warnings []Warning
	// Blocked says why the failures are not repaired; "" when they are or
	// when the run did not fail.
	Blocked string
}

// Repairable reports whether a model may fix the error by editing the
// workflow, and when not, why.
func Repairable(e *node.Error) (bool, string) {
	if e == nil {
		return false, "there is no error"
	}
	if record.Fixable(e) {
		return true, "" // the rule every recorded error's fixable field gives
	}
	switch e.Category {
	case node.CategoryHTTPStatus:
		status := statusOf(e)
		switch {
		case status == 401 || status == 403:
			return false, fmt.Sprintf("HTTP %d is an authentication error; check the credentials (authentication errors are never repaired)", status)
		case status == 408 || status == 429:
			return false, fmt.Sprintf("HTTP %d asks to wait and try again, which an edit does not cure", status)
		case status >= 500:
			return false, fmt.Sprintf("HTTP %d is a server error, which an edit does not cure", status)
		}
		return false, fmt.Sprintf("HTTP status %d is not a bad request", status)
	case llm.CategoryAuthentication:
		return false, "authentication errors are never repaired; check the credentials"
	case engine.CategoryBudget:
		return false, "budget errors are never repaired; raise limits: or spend less"
	}
	return false, fmt.Sprintf("%s errors are not repaired", e.Category)
}

// statusOf reads the HTTP status of an http_status error: Details.status,
// else the code http_<status>.
func statusOf(e *node.Error) int { return record.HTTPStatus(e) }

// BusinessError reports an API that answered well but said no: `"ok":
// false`, `"success": false`, a `"status"` of 400 or more or a non-empty
// GraphQL `errors` list, in an http output's body or (ok and errors) at the
// top of an mcp output (apierr.InOutput). The top-level `success` of an
// output is the scheduler's and is not read.
func BusinessError(output map[string]any) (string, bool) { return apierr.InOutput(output) }

// businessKinds are the kinds whose outputs carry an API's answer.
var businessKinds = map[string]bool{"http": true, "mcp": true}

// FromDiagnostics turns a workflow's validation errors into problems. w may
// be nil (a file that did not parse); reg gives the upstream fields.
func FromDiagnostics(w *workflow.Workflow, reg *node.Registry, ds workflow.Diagnostics) []Problem {
	var out []Problem
	for _, d := range ds.Errors() {
		p := Problem{Phase: PhaseValidation, Node: d.Node, Category: node.CategoryValidation,
			Message: d.Message, Path: d.Path, Line: d.Line, Col: d.Col}
		if w != nil && d.Node != "" {
			if n := w.Node(d.Node); n != nil {
				p.Type = n.Type
				p.Upstream = upstreamFields(w, reg, d.Node, nil)
			}
		}
		out = append(out, p)
	}
	return out
}

// Assess reads a finished run: its failures as problems (when all of them
// may be repaired), and the business errors of its successful http and mcp
// steps as warnings. A failure after a node with a business error is not
// repaired either: the API's refusal is its cause.
func Assess(w *workflow.Workflow, reg *node.Registry, res *engine.Result) Assessment {
	var a Assessment
	latest := Latest(res.Steps)
	warned := map[string]string{}
	for _, s := range latest {
		if s.Status != engine.StatusSuccess || s.Cached || s.Pinned || !businessKinds[s.Type] {
			continue
		}
		if msg, ok := BusinessError(s.Output); ok {
			a.Warnings = append(a.Warnings, Warning{Node: s.Node, Visit: s.Visit, Message: msg})
			warned[s.Node] = msg
		}
	}
	if res.Status != engine.RunFailed {
		return a
	}
	outputs := map[string]map[string]any{}
	for _, s := range latest {
		if s.Status == engine.StatusSuccess {
			outputs[s.Node] = s.Output
		}
	}
	for _, s := range latest {
		if s.Status != engine.StatusFailed || s.Error == nil || s.Error.Category == node.CategoryCancelled {
			continue // a cancelled step follows another failure
		}
		if ok, why := Repairable(s.Error); !ok {
			a.Problems, a.Blocked = nil, fmt.Sprintf("node %s failed (%s: %s); %s", s.Node, s.Error.Category, clip(s.Error.Message, 200), why)
			return a
		}
		for _, up := range ancestors(w, s.Node) {
			if msg, ok := warned[up]; ok {
				a.Problems, a.Blocked = nil, fmt.Sprintf("node %s failed after node %s, whose API refused the request (%s); business errors are not repaired", s.Node, up, msg)
				return a
			}
		}
		a.Problems = append(a.Problems, stepProblem(w, reg, s, outputs))
	}
	if len(a.Problems) == 0 && res.Error != nil {
		// The run failed outside any step: its outputs, most often.
		if ok, why := Repairable(res.Error); !ok {
			a.Blocked = fmt.Sprintf("the run failed (%s: %s); %s", res.Error.Category, clip(res.Error.Message, 200), why)
			return a
		}
		a.Problems = append(a.Problems, Problem{Phase: PhaseRuntime, Category: res.Error.Category, Code: res.Error.Code, Message: res.Error.Message})
	}
	if len(a.Problems) == 0 {
		a.Blocked = "the run failed without an error to repair"
	}
	return a
}

func stepProblem(w *workflow.Workflow, reg *node.Registry, s *engine.StepRecord, outputs map[string]map[string]any) Problem {
	e := s.Error
	p := Problem{Phase: PhaseRuntime, Node: s.Node, Type: s.Type, Category: e.Category, Code: e.Code,
		Message: e.Message, Params: s.Params}
	if e.Category == node.CategoryHTTPStatus {
		p.Status = statusOf(e)
	}
	if e.Details != nil {
		switch b := e.Details["body"].(type) {
		case nil:
		case string:
			p.Body = clip(b, MaxBody)
		default:
			js, _ := json.Marshal(b)
			p.Body = clip(string(js), MaxBody)
		}
		if p.Body == "" {
			if t, ok := e.Details["text"].(string); ok { // mcp_tool_error
				p.Body = clip(t, MaxBody)
			}
		}
		if se, ok := e.Details["stderr"].(string); ok {
			p.Stderr = tail(strings.TrimSpace(se), MaxBody)
		}
		if so, ok := e.Details["stdout"].(string); ok && e.Details["exit_code"] != nil {
			p.Stdout = tail(strings.TrimSpace(so), MaxBody)
		}
		p.Missing, _ = e.Details["missing"].(string)
		if fs, ok := e.Details["available_fields"].([]any); ok {
			for _, f := range fs {
				if s, ok := f.(string); ok {
					p.AvailableFields = append(p.AvailableFields, s)
				}
			}
		}
	}
	p.Upstream = upstreamFields(w, reg, s.Node, outputs)
	return p
}

// Latest keeps the last record of each node, in the order the nodes were
// first recorded.
func Latest(steps []*engine.StepRecord) []*engine.StepRecord {
	idx := map[string]int{}
	var out []*engine.StepRecord
	for _, s := range steps {
		if i, ok := idx[s.Node]; ok {
			if s.Visit >= out[i].Visit {
				out[i] = s
			}
			continue
		}
		idx[s.Node] = len(out)
		out = append(out, s)
	}
	return out
}

// ancestors lists the nodes with a path to id, nearest first.
func ancestors(w *workflow.Workflow, id string) []string {
	if w == nil {
		return nil
	}
	g := w.Graph()
	start, ok := g.Index[id]
	if !ok {
		return nil
	}
	seen := map[int]bool{start: true}
	queue := []int{start}
	var out []string
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		for _, ei := range g.In[i] {
			from := g.Edges[ei].From
			if !seen[from] {
				seen[from] = true
				out = append(out, g.Nodes[from].ID)
				queue = append(queue, from)
			}
		}
	}
	return out
}

// maxFields bounds the fields listed per node.
const maxFields = 40

// upstreamFields lists what the nodes before id offer: the fields of their
// outputs when they ran (outputs), else the ports their kinds declare.
func upstreamFields(w *workflow.Workflow, reg *node.Registry, id string, outputs map[string]map[string]any) []Fields {
	var out []Fields
	for _, up := range ancestors(w, id) {
		n := w.Node(up)
		f := Fields{Node: up, Type: n.Type}
		if o, ok := outputs[up]; ok {
			f.Fields = OutputFields(o)
		} else if reg != nil {
			if spec, ok := reg.Lookup(n.Type); ok {
				f.Fields = spec.DeclaredOutputs(n.Params)
			}
		}
		out = append(out, f)
	}
	return out
}

// OutputFields lists the fields of an output two levels deep, with their
// types: "status (number)", "body.items (list of 3)". The scheduler's
// success field is left out.
func OutputFields(o map[string]any) []string {
	var out []string
	var walk func(prefix string, m map[string]any, depth int)
	walk = func(prefix string, m map[string]any, depth int) {
		keys := make([]string, 0, len(m))
		for k := range m {
			if prefix == "" && k == "success" {
				continue
			}
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if len(out) >= maxFields {
				return
			}
			path := k
			if prefix != "" {
				path = prefix + "." + k
			}
			v := m[k]
			out = append(out, path+" ("+typeName(v)+")")
			if depth > 0 {
				switch x := v.(type) {
				case map[string]any:
					walk(path, x, depth-1)
				case []any:
					if len(x) > 0 {
						if first, ok := x[0].(map[string]any); ok {
							walk(path+"[0]", first, depth-1)
						}
					}
				}
			}
		}
	}
	walk("", o, 2)
	return out
}

func typeName(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, float64, json.Number:
		return "number"
	case []any:
		return fmt.Sprintf("list of %d", len(x))
	case map[string]any:
		return "map"
	}
	return fmt.Sprintf("%T", v)
}

// clip cuts s to at most n bytes on a rune boundary, marking the cut.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return strings.TrimSpace(s[:cut]) + " …(truncated)"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

// tail is the last n bytes of s, cut at a line start when one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[len(s)-n:]
	if i := strings.IndexByte(s, '\n'); i >= 0 && i < 200 {
		s = s[i+1:]
	}
	return "…" + s
}
