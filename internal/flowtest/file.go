package flowtest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/skeinhq/skein/expr"
	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/confine"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Suffix ends the name of every test file.
const Suffix = ".test.yaml"

// File is a test file, checked against its workflow.
type File struct {
	Path     string
	Workflow *workflow.Workflow
	// Secrets are values for the workflow's secrets during its tests.
	Secrets map[string]string
	Cases   []*Case
}

// Case is one test case.
type Case struct {
	Name    string
	Line    int
	Inputs  map[string]any
	Trigger string
	Payload map[string]any
	// Mocks answer nodes by id; the answer of a visit is the entry of
	// that visit, the last one for any later visit.
	Mocks map[string][]Mock
	// Cassette is the file of a recorded run (skein run --record) the
	// case's run answers its interactions from; skein test --update
	// records it again. Relative paths are the test file's, and it must
	// stay inside the test file's folder (symlinks resolved).
	Cassette string
	// CassetteLine is where the case names its cassette.
	CassetteLine int
	cassetteRef  string // as written, relative to the test file's folder
	Expect       Expect
	// Judge answers the run's judged checks (expect:, screen checks).
	Judge check.Judge
}

// Mock is the answer of one visit of a node: an output or an error.
type Mock struct {
	Output map[string]any `yaml:"output"`
	Error  *MockError     `yaml:"error"`
}

// MockError is the error a mocked node fails with.
type MockError struct {
	Message  string `yaml:"message"`
	Category string `yaml:"category"`
	Code     string `yaml:"code"`
}

// Expect is what a case asserts; unset fields are not checked, but for
// Status, which is completed unless given.
type Expect struct {
	Status     string                `yaml:"status"`
	Outputs    map[string]any        `yaml:"outputs"`
	Steps      map[string]StepExpect `yaml:"steps"`
	Verdict    string                `yaml:"verdict"`
	MaxCostUSD *float64              `yaml:"max_cost_usd"`
	MaxTokens  *int                  `yaml:"max_tokens"`
}

// StepExpect is what a case asserts about one node's steps.
type StepExpect struct {
	Status string `yaml:"status"`
	Visits *int   `yaml:"visits"`
	Branch string `yaml:"branch"`
}

// Error is a problem of a test file: it names the file and the line.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// The file as written.
type fileDoc struct {
	Workflow string            `yaml:"workflow"`
	Secrets  map[string]string `yaml:"secrets"`
	Cases    []caseDoc         `yaml:"cases"`
}

type caseDoc struct {
	Name     string               `yaml:"name"`
	Inputs   map[string]any       `yaml:"inputs"`
	Trigger  string               `yaml:"trigger"`
	Payload  map[string]any       `yaml:"payload"`
	Mocks    map[string]yaml.Node `yaml:"mocks"`
	Cassette string               `yaml:"cassette"`
	Judge    string               `yaml:"judge"`
	Expect   Expect               `yaml:"expect"`
}

// lineError is a problem at a line of the file.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string { return e.msg }

func atLine(n *yaml.Node, format string, args ...any) error {
	return &lineError{line: n.Line, msg: fmt.Sprintf(format, args...)}
}

// decodeMocks reads a node's mock, written as one answer or as a list of
// answers, one per visit.
func decodeMocks(n *yaml.Node) ([]Mock, error) {
	items := []*yaml.Node{n}
	if n.Kind == yaml.SequenceNode {
		if len(n.Content) == 0 {
			return nil, atLine(n, "a mock list needs at least one entry")
		}
		items = n.Content
	}
	var ms []Mock
	for _, it := range items {
		if it.Kind != yaml.MappingNode {
			return nil, atLine(it, "a mock is {output: {...}} or {error: {message: ...}}, not %s", yamlKind(it))
		}
		var one Mock
		for i := 0; i+1 < len(it.Content); i += 2 {
			k, v := it.Content[i], it.Content[i+1]
			switch k.Value {
			case "output":
				if v.Kind != yaml.MappingNode {
					return nil, atLine(v, "output of a mock is a map of the node's outputs, not %s", yamlKind(v))
				}
				if err := v.Decode(&one.Output); err != nil {
					return nil, atLine(v, "output of a mock is a map of the node's outputs: %v", err)
				}
				if one.Output == nil {
					one.Output = map[string]any{}
				}
			case "error":
				if err := decodeError(v, &one); err != nil {
					return nil, err
				}
			default:
				return nil, atLine(k, "unknown key %q in a mock; a mock has output or error", k.Value)
			}
		}
		if (one.Output == nil) == (one.Error == nil) {
			return nil, atLine(it, "a mock has either output or error (not both, not neither)")
		}
		ms = append(ms, one)
	}
	return ms, nil
}

// alwaysOutputs are the outputs every node has besides its kind's ports.
var alwaysOutputs = []string{"success", "error", "confidence"}

// directiveShapes are the directives a mock may answer with, and what each
// must be (nil: anything its node kind would accept).
var directiveShapes = map[string]func(any) bool{
	"_route":         func(v any) bool { _, s := v.(string); _, b := v.(bool); return s || b },
	"_state_patch":   isMap,
	"_token_usage":   isMap,
	"_delay_seconds": isNumber,
	"_confidence":    func(v any) bool { f, ok := number(v); return ok && f >= 0 && f <= 1 },
	"_messages":      func(v any) bool { _, l := v.([]any); return l || isMap(v) },
	"_await":         nil, "_await_name": nil, "_resume": nil,
}

func isMap(v any) bool    { _, ok := v.(map[string]any); return ok }
func isNumber(v any) bool { _, ok := number(v); return ok }

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// checkMockOutputs refuses a mock output's key that node id's kind does
// not declare (declared nil: the kind's ports are not known before a run),
// a directive Skein does not know, and a directive of the wrong shape:
// each would be dropped, or read as null downstream, without a word.
func checkMockOutputs(id string, declared []string, ms []Mock, raw *yaml.Node) error {
	items := []*yaml.Node{raw}
	if raw.Kind == yaml.SequenceNode {
		items = raw.Content
	}
	for j, m := range ms {
		lineOfKey := func(k string) *yaml.Node {
			it := items[j]
			for i := 0; i+1 < len(it.Content); i += 2 {
				if it.Content[i].Value == "output" {
					out := it.Content[i+1]
					for o := 0; o+1 < len(out.Content); o += 2 {
						if out.Content[o].Value == k {
							return out.Content[o]
						}
					}
					return out
				}
			}
			return it
		}
		for _, k := range slices.Sorted(maps.Keys(m.Output)) {
			v := m.Output[k]
			if strings.HasPrefix(k, "_") {
				shape, ok := directiveShapes[k]
				if !ok {
					known := slices.Sorted(maps.Keys(directiveShapes))
					msg := fmt.Sprintf("output key %q is not a directive Skein knows (%s)", k, strings.Join(known, ", "))
					if s, ok := workflow.Closest(k, known); ok {
						msg = fmt.Sprintf("output key %q is not a directive Skein knows; did you mean %q?", k, s)
					}
					return atLine(lineOfKey(k), "%s", msg)
				}
				if shape != nil && !shape(v) {
					return atLine(lineOfKey(k), "the directive %s cannot be %s (docs/testing.md, Mocks, says what each takes)", k, describe(v))
				}
				continue
			}
			if declared == nil || slices.Contains(declared, k) || slices.Contains(alwaysOutputs, k) {
				continue
			}
			msg := fmt.Sprintf("output key %q is not an output of node %q", k, id)
			if s, ok := workflow.Closest(k, declared); ok {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else if len(declared) > 0 {
				msg += fmt.Sprintf(" (its outputs: %s)", strings.Join(declared, ", "))
			}
			return atLine(lineOfKey(k), "%s", msg)
		}
	}
	return nil
}

// describe names a value of a mock for a message.
func describe(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case map[string]any:
		return "a map"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("the string %q", x)
	}
	return fmt.Sprintf("%v", v)
}

// yamlKind names what a YAML node is, for a message.
func yamlKind(n *yaml.Node) string {
	switch {
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a map"
	case n.ShortTag() == "!!null":
		return "empty (null)"
	}
	return fmt.Sprintf("%q", n.Value)
}

func decodeError(v *yaml.Node, one *Mock) error {
	if v.Kind != yaml.MappingNode {
		return atLine(v, "error of a mock is {message: ..., category: ...}")
	}
	e := &MockError{}
	for i := 0; i+1 < len(v.Content); i += 2 {
		k, val := v.Content[i], v.Content[i+1]
		var dst *string
		switch k.Value {
		case "message":
			dst = &e.Message
		case "category":
			dst = &e.Category
		case "code":
			dst = &e.Code
		default:
			return atLine(k, "unknown key %q in a mock's error; it has message, category and code", k.Value)
		}
		if err := val.Decode(dst); err != nil {
			return atLine(val, "%s of a mock's error is a string", k.Value)
		}
	}
	if e.Message == "" {
		return atLine(v, "a mock's error needs a message")
	}
	switch e.Category {
	case "":
		e.Category = node.CategoryExecution
	case "execution":
		e.Category = node.CategoryExecution
	case node.CategoryExecution, node.CategoryTimeout, node.CategoryHTTPStatus, node.CategoryConnection,
		node.CategoryValidation, node.CategoryTemplate, node.CategoryInternal:
	default:
		return atLine(v, "unknown error category %q; use execution, timeout, http_status, connection, validation, template or internal", e.Category)
	}
	if e.Code == "" {
		e.Code = "mock"
	}
	one.Error = e
	return nil
}

// unmockable are the roles whose nodes the scheduler settles itself (or
// that decide a loop): there is no task to answer.
var unmockable = map[node.Role]string{
	node.RoleTrigger: "a trigger", node.RoleLoop: "a loop", node.RoleForEach: "a foreach",
	node.RoleLoopEnd: "an endloop", node.RoleJoin: "a merge",
}

// Load reads the test file at path and checks it against its workflow:
// the file beside it with the same name less .test (.yaml, .yml or
// .json), or the one its workflow: key names, relative to it.
func Load(path string, reg *node.Registry) (*File, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &Error{File: path, Msg: fmt.Sprintf("cannot read the test file: %v", err)}
	}
	var doc fileDoc
	dec := yaml.NewDecoder(bytes.NewReader(src))
	dec.KnownFields(true)
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{File: path, Msg: "the file is empty; a test file has cases: [{name: ..., expect: {status: completed}}] (the format is in docs/testing.md)"}
		}
		return nil, yamlError(path, src, err)
	}
	var root yaml.Node
	_ = yaml.Unmarshal(src, &root) // it decoded above: positions only
	if n := nonFinite(&root); n != nil {
		return nil, &Error{File: path, Line: n.Line, Msg: workflow.NonFinite(n.Value)}
	}
	at := func(keys ...any) int { return lineOf(&root, keys...) }
	if len(doc.Cases) == 0 {
		return nil, &Error{File: path, Line: 1, Msg: "the file has no cases; add cases: [{name: ..., expect: {status: completed}}]"}
	}
	var wfPath string
	if doc.Workflow != "" {
		err = inFolder(path, doc.Workflow, "workflow", "move the test file beside its workflow, or into a folder that holds it")
	}
	if err == nil {
		wfPath, err = workflowOf(path, doc.Workflow)
	}
	if err != nil {
		return nil, &Error{File: path, Line: at("workflow"), Msg: err.Error()}
	}
	w, ds := workflow.Load(wfPath, reg)
	if ds.HasErrors() {
		return nil, &Error{File: path, Msg: fmt.Sprintf("its workflow %s is not valid: %s (run skein validate %s)", wfPath, ds.Errors()[0], wfPath)}
	}
	f := &File{Path: path, Workflow: w, Secrets: doc.Secrets}
	byID := map[string]*workflow.Node{}
	ids := make([]string, 0, len(w.Nodes))
	for _, n := range w.Nodes {
		byID[n.ID] = n
		ids = append(ids, n.ID)
	}
	unknown := func(id string, line int, what string) error {
		msg := fmt.Sprintf("%s names node %q, which %s does not have", what, id, wfPath)
		if s, ok := workflow.Closest(id, ids); ok {
			msg += fmt.Sprintf("; did you mean %q?", s)
		} else {
			msg += fmt.Sprintf(" (its nodes: %s)", strings.Join(ids, ", "))
		}
		return &Error{File: path, Line: line, Msg: msg}
	}
	names := map[string]bool{}
	for i, cd := range doc.Cases {
		line := at("cases", i)
		if cd.Name == "" {
			return nil, &Error{File: path, Line: line, Msg: "a case needs a name"}
		}
		if names[cd.Name] {
			return nil, &Error{File: path, Line: at("cases", i, "name"), Msg: fmt.Sprintf("two cases are named %q; give each its own name", cd.Name)}
		}
		names[cd.Name] = true
		c := &Case{Name: cd.Name, Line: line, Trigger: cd.Trigger, Payload: plainMap(cd.Payload), Mocks: map[string][]Mock{}, Expect: cd.Expect}
		if cd.Cassette != "" {
			c.Cassette, c.cassetteRef, c.CassetteLine = cd.Cassette, cd.Cassette, orLine(at("cases", i, "cassette"), line)
			if !filepath.IsAbs(c.Cassette) {
				c.Cassette = filepath.Join(filepath.Dir(path), c.Cassette)
			}
			if err := c.cassetteInFolder(path); err != nil {
				return nil, err
			}
		}
		in, err := w.ResolveInputs(plainMap(cd.Inputs))
		if err != nil {
			return nil, &Error{File: path, Line: orLine(at("cases", i, "inputs"), line), Msg: fmt.Sprintf("case %q: %v", cd.Name, err)}
		}
		c.Inputs = in
		switch cd.Judge {
		case "", "pass":
			c.Judge = verdictJudge("pass")
		case "fail":
			c.Judge = verdictJudge("fail")
		default:
			return nil, &Error{File: path, Line: at("cases", i, "judge"), Msg: fmt.Sprintf("case %q: judge is pass or fail (the verdict of every judged check), not %q", cd.Name, cd.Judge)}
		}
		if cd.Trigger != "" {
			n, ok := byID[cd.Trigger]
			if !ok {
				return nil, unknown(cd.Trigger, at("cases", i, "trigger"), fmt.Sprintf("case %q: trigger", cd.Name))
			}
			if s, ok := reg.Lookup(n.Type); !ok || s.Role != node.RoleTrigger {
				return nil, &Error{File: path, Line: at("cases", i, "trigger"), Msg: fmt.Sprintf("case %q: node %q is a %s, not a trigger", cd.Name, cd.Trigger, n.Type)}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(cd.Mocks)) {
			n, ok := byID[id]
			if !ok {
				return nil, unknown(id, at("cases", i, "mocks", id), fmt.Sprintf("case %q: mocks", cd.Name))
			}
			spec, known := reg.Lookup(n.Type)
			if known {
				if what, no := unmockable[spec.Role]; no {
					return nil, &Error{File: path, Line: at("cases", i, "mocks", id), Msg: fmt.Sprintf(
						"case %q: node %q is %s (%s), which the engine settles without running it, so it cannot be mocked; mock the nodes around it", cd.Name, id, what, n.Type)}
				}
			}
			raw := cd.Mocks[id]
			ms, err := decodeMocks(&raw)
			if err == nil && known {
				err = checkMockOutputs(id, spec.DeclaredOutputs(n.Params), ms, &raw)
			}
			if err != nil {
				line := at("cases", i, "mocks", id)
				var le *lineError
				if errors.As(err, &le) && le.line > 0 {
					line = le.line
				}
				return nil, &Error{File: path, Line: line, Msg: fmt.Sprintf("case %q: mocks.%s: %v", cd.Name, id, err)}
			}
			for j := range ms {
				ms[j].Output = plainMap(ms[j].Output)
			}
			c.Mocks[id] = ms
		}
		for _, id := range slices.Sorted(maps.Keys(cd.Expect.Steps)) {
			se := cd.Expect.Steps[id]
			if _, ok := byID[id]; !ok {
				return nil, unknown(id, at("cases", i, "expect", "steps", id), fmt.Sprintf("case %q: expect.steps", cd.Name))
			}
			if se.Status != "" && !stepStatuses[se.Status] {
				return nil, &Error{File: path, Line: at("cases", i, "expect", "steps", id, "status"), Msg: fmt.Sprintf(
					"case %q: unknown step status %q; use one of %s", cd.Name, se.Status, keys(stepStatuses))}
			}
			if n := valueAt(&root, "cases", i, "expect", "steps", id, "visits"); n != nil && n.ShortTag() != "!!int" {
				return nil, &Error{File: path, Line: n.Line, Msg: fmt.Sprintf(
					"case %q: expect.steps.%s.visits is %s; a node is visited a whole number of times, 0 or more", cd.Name, id, yamlKind(n))}
			}
			if se.Visits != nil && *se.Visits < 0 {
				return nil, &Error{File: path, Line: at("cases", i, "expect", "steps", id, "visits"), Msg: fmt.Sprintf(
					"case %q: expect.steps.%s.visits is %d; a node is visited 0 or more times", cd.Name, id, *se.Visits)}
			}
		}
		if len(w.Outputs) > 0 {
			var declared []string
			for _, o := range w.Outputs {
				declared = append(declared, o.Name)
			}
			for _, name := range slices.Sorted(maps.Keys(cd.Expect.Outputs)) {
				if slices.Contains(declared, name) {
					continue
				}
				msg := fmt.Sprintf("case %q: expect.outputs names output %q, which %s does not declare", cd.Name, name, wfPath)
				if s, ok := workflow.Closest(name, declared); ok {
					msg += fmt.Sprintf("; did you mean %q?", s)
				} else {
					msg += fmt.Sprintf(" (its outputs: %s)", strings.Join(declared, ", "))
				}
				return nil, &Error{File: path, Line: at("cases", i, "expect", "outputs", name), Msg: msg}
			}
		}
		if n := valueAt(&root, "cases", i, "expect", "max_tokens"); n != nil && n.ShortTag() != "!!int" {
			return nil, &Error{File: path, Line: n.Line, Msg: fmt.Sprintf("case %q: expect.max_tokens is %s; it is a whole number of tokens", cd.Name, yamlKind(n))}
		}
		if m := cd.Expect.MaxTokens; m != nil && *m < 0 {
			return nil, &Error{File: path, Line: at("cases", i, "expect", "max_tokens"), Msg: fmt.Sprintf(
				"case %q: expect.max_tokens is %d; no run could meet it (a run uses 0 tokens or more)", cd.Name, *m)}
		}
		if m := cd.Expect.MaxCostUSD; m != nil && *m < 0 {
			return nil, &Error{File: path, Line: at("cases", i, "expect", "max_cost_usd"), Msg: fmt.Sprintf(
				"case %q: expect.max_cost_usd is %g; no run could meet it (a run costs 0 or more)", cd.Name, *m)}
		}
		if s := cd.Expect.Status; s != "" && !runStatuses[s] {
			return nil, &Error{File: path, Line: at("cases", i, "expect", "status"), Msg: fmt.Sprintf(
				"case %q: unknown run status %q; use one of %s", cd.Name, s, keys(runStatuses))}
		}
		if v := cd.Expect.Verdict; v != "" && !verdicts[v] {
			return nil, &Error{File: path, Line: at("cases", i, "expect", "verdict"), Msg: fmt.Sprintf(
				"case %q: unknown verdict %q; use one of %s, or none when the workflow has no checks", cd.Name, v, keys(verdicts))}
		}
		f.Cases = append(f.Cases, c)
	}
	return f, nil
}

var (
	runStatuses  = set("completed", "failed", "cancelled", "waiting")
	stepStatuses = set("success", "failed", "skipped", "waiting", "cancelled")
	verdicts     = set("PASSED", "PASSED WITH WARNINGS", "FAILED", "INCOMPLETE", "none")
)

func set(xs ...string) map[string]bool {
	m := map[string]bool{}
	for _, x := range xs {
		m[x] = true
	}
	return m
}

func keys(m map[string]bool) string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func orLine(l, def int) int {
	if l > 0 {
		return l
	}
	return def
}

// inFolder refuses a path the test file at file names (under key) that
// leads outside the test file's folder, symlinks resolved: a test run
// reads it, and skein test --update writes cassettes.
func inFolder(file, named, key, fix string) error {
	_, err := confine.Resolve(named, filepath.Dir(file))
	return folderError(named, key, fix, err)
}

// folderError is how inFolder reports err, the failure to resolve named.
func folderError(named, key, fix string, err error) error {
	switch {
	case errors.Is(err, confine.ErrEscapes):
		return fmt.Errorf("%s: %w, the folder of the test file; %s", key, err, fix)
	case err != nil:
		return fmt.Errorf("%s: %q cannot be resolved: %w", key, named, err)
	}
	return nil
}

// cassetteInFolder refuses the case's cassette when it leads outside the
// folder of the test file at file, with the line that names it.
func (c *Case) cassetteInFolder(file string) error {
	_, err := confine.Resolve(c.cassetteRef, filepath.Dir(file))
	return c.cassetteError(file, err)
}

// cassetteError is err, a failure to resolve or write the case's cassette
// beneath the folder of the test file at file, with the line naming it.
func (c *Case) cassetteError(file string, err error) error {
	fix := "move the cassette into " + absDir(file) + " (a subfolder such as testdata/cassettes/ is fine) and name it there"
	if err := folderError(c.cassetteRef, "cassette", fix, err); err != nil {
		return &Error{File: file, Line: c.CassetteLine, Msg: fmt.Sprintf("case %q: %v", c.Name, err)}
	}
	return nil
}

// absDir is the folder of file, absolute when it can be made so.
func absDir(file string) string {
	if abs, err := filepath.Abs(filepath.Dir(file)); err == nil {
		return abs
	}
	return filepath.Dir(file)
}

// workflowOf returns the workflow a test file tests.
func workflowOf(path, named string) (string, error) {
	dir := filepath.Dir(path)
	if named != "" {
		p := named
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, named)
		}
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("workflow: %s does not exist", p)
		}
		return p, nil
	}
	base := strings.TrimSuffix(filepath.Base(path), Suffix)
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		p := filepath.Join(dir, base+ext)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("no workflow %s.yaml beside the test file; put the test beside its workflow or name it with workflow: FILE", base)
}

// yamlError turns a decoding error into an Error with the line it names:
// a syntax error as a workflow file's are told (workflow.YAMLError), a
// value of the wrong kind in the file's terms.
func yamlError(path string, src []byte, err error) error {
	var te *yaml.TypeError
	if !errors.As(err, &te) || len(te.Errors) == 0 {
		pos, msg := workflow.YAMLError(src, err)
		return &Error{File: path, Line: pos.Line, Msg: msg + " (the format is in docs/testing.md)"}
	}
	msg := te.Errors[0]
	msg = strings.TrimPrefix(msg, "yaml: ")
	line := 0
	if n, _ := fmt.Sscanf(msg, "line %d:", &line); n == 1 {
		if i := strings.Index(msg, ":"); i >= 0 {
			msg = strings.TrimSpace(msg[i+1:])
		}
	}
	msg = inYAMLTerms(msg)
	for typ, what := range map[string]string{"fileDoc": "a test file (workflow, secrets, cases)",
		"caseDoc": "a case (name, inputs, trigger, payload, mocks, cassette, judge, expect)",
		"Expect":  "expect (status, outputs, steps, verdict, max_cost_usd, max_tokens)", "StepExpect": "a step's expectations (status, visits, branch)"} {
		msg = strings.Replace(msg, "not found in type flowtest."+typ, "is not a key of "+what, 1)
	}
	return &Error{File: path, Line: line, Msg: msg + " (the format is in docs/testing.md)"}
}

// cannotUnmarshal is the YAML decoder's message for a value of the wrong
// kind: its tag, its text (for a scalar) and the Go type it was meant for.
// Built on first use: a run that tests nothing does not pay for it.
var cannotUnmarshal = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("^cannot unmarshal !!(\\w+)(?: `([^`]*)`)? into (.+)$")
})

// inYAMLTerms says a value of the wrong kind in the file's terms, not the
// Go types it is decoded into: "expected a map, got the number 1".
func inYAMLTerms(msg string) string {
	m := cannotUnmarshal().FindStringSubmatch(msg)
	if m == nil {
		return msg
	}
	var want string
	switch goType := strings.TrimPrefix(m[3], "*"); {
	case strings.HasPrefix(goType, "map["), strings.HasPrefix(goType, "flowtest."):
		want = "a map"
	case strings.HasPrefix(goType, "[]"):
		want = "a list"
	case goType == "string":
		want = "text"
	case goType == "bool":
		want = "true or false"
	case strings.HasPrefix(goType, "int"), strings.HasPrefix(goType, "float"):
		want = "a number"
	default:
		return msg
	}
	var got string
	switch m[1] {
	case "int", "float":
		got = "the number " + m[2]
	case "str":
		got = "the text " + strconv.Quote(m[2])
	case "bool", "null":
		got = m[2]
	case "seq":
		got = "a list"
	case "map":
		got = "a map"
	default:
		return msg
	}
	return "expected " + want + ", got " + got
}

// lineOf returns the line of the value at keys (map keys are strings,
// list indexes ints) in a YAML document; 0 when it is not there.
func lineOf(root *yaml.Node, keys ...any) int {
	_, line := walk(root, keys)
	return line
}

// valueAt returns the value node at keys under root, or nil.
func valueAt(root *yaml.Node, keys ...any) *yaml.Node {
	n, _ := walk(root, keys)
	return n
}

// walk follows keys (map keys and list indexes) from root to a value:
// the value's node, and its line — a map key's own line for a map's
// value. Neither when a key is not there.
func walk(root *yaml.Node, keys []any) (*yaml.Node, int) {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	line := n.Line
	for _, k := range keys {
		switch k := k.(type) {
		case int:
			if n.Kind != yaml.SequenceNode || k >= len(n.Content) {
				return nil, 0
			}
			n = n.Content[k]
			line = n.Line
		case string:
			if n.Kind != yaml.MappingNode {
				return nil, 0
			}
			found := false
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == k {
					line, n, found = n.Content[i].Line, n.Content[i+1], true
					break
				}
			}
			if !found {
				return nil, 0
			}
		}
	}
	return n, line
}

// answer is the engine's reuse answer of a mock.
func (m Mock) answer() (out, directives map[string]any, err *node.Error) {
	if m.Error != nil {
		// Permanent: every attempt would get the same answer, so the
		// node's retries are not waited for.
		return nil, nil, &node.Error{Code: m.Error.Code, Category: m.Error.Category, Message: m.Error.Message, Permanent: true}
	}
	out, directives = expr.SplitDirectives(m.Output)
	return out, directives, nil
}

// plainMap is m with the values YAML decodes that JSON has not turned
// into those it has: a timestamp becomes its RFC 3339 text, a map with
// keys that are not strings a map of their text.
func plainMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out, _ := plain(m).(map[string]any)
	return out
}

func plain(v any) any {
	switch x := v.(type) {
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = plain(v)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[fmt.Sprint(k)] = plain(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = plain(v)
		}
		return out
	}
	return v
}

// nonFinite returns the first number under n that is infinite or not a
// number (.inf, .nan): a case's inputs and mocks become a run's records,
// which are JSON; nil when there is none.
func nonFinite(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
		var f float64
		if n.Decode(&f) == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
			return n
		}
	}
	for _, c := range n.Content {
		if bad := nonFinite(c); bad != nil {
			return bad
		}
	}
	return nil
}
