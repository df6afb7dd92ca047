package repair

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/skeinhq/skein/internal/engine"
	"github.com/skeinhq/skein/internal/llm"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Step is one line of a run's summary for the model.
type Step struct {
	Node   string `json:"node"`
	Type   string `json:"type"`
	Status string `json:"status"` // a step status, or "not run"
	Reused bool   `json:"reused,omitempty"`
	// Error is category: message of a failed step.
	Error string `json:"error,omitempty"`
	// Fields lists the output fields of a step that succeeded.
	Fields []string `json:"fields,omitempty"`
}

// Steps summarises a run for the model: the last visit of every node of w
// that ran, in the order they ran, then the nodes that did not run.
func Steps(w *workflow.Workflow, res *engine.Result) []Step {
	var out []Step
	ran := map[string]bool{}
	if res != nil {
		for _, s := range Latest(res.Steps) {
			ran[s.Node] = true
			st := Step{Node: s.Node, Type: s.Type, Status: string(s.Status), Reused: s.Cached || s.Pinned}
			if s.Error != nil && s.Status == engine.StatusFailed {
				st.Error = s.Error.Category + ": " + clip(s.Error.Message, 300)
			}
			if s.Status == engine.StatusSuccess {
				st.Fields = OutputFields(s.Output)
			}
			out = append(out, st)
		}
	}
	if w != nil {
		for _, n := range w.Nodes {
			if !ran[n.ID] {
				out = append(out, Step{Node: n.ID, Type: n.Type, Status: "not run"})
			}
		}
	}
	return out
}

// Case is everything the model is told about one repair.
type Case struct {
	// File is the workflow's file name; Source its text.
	File   string
	Source []byte
	// Problems are the errors to fix.
	Problems []Problem
	// Steps summarise the run so far; nil when nothing ran (a workflow
	// that did not validate).
	Steps []Step
	// Kinds are the specs of the node kinds the workflow uses.
	Kinds []*node.Spec
	// Earlier are the changes made by earlier repairs in this run, one per
	// line.
	Earlier []string
	// Redact removes secret values from what is sent; nil sends text as
	// it is.
	Redact func(string) string
}

const system = `You repair workflow files of Skein, a workflow engine.

A workflow file is YAML (or JSON): version, name, inputs, secrets, nodes, edges and outputs. Each node has an id, a type (its kind) and the parameters of its kind. Edges connect node ids (from, to, and on: for a handle such as error). Templates are written {{ expression }} and read inputs.NAME, secrets.NAME, or NODE_ID.FIELD, the output of a node upstream.

You get the workflow, the errors it produced, what the run did so far, and the node kinds it uses. Fix the cause of the errors:
- Change as little as possible; keep comments, order and layout.
- Keep every node id. Nodes that succeeded and that you leave unchanged are reused, not run again.
- A failure may be caused upstream (a parameter one node passes to the next): fix it where it is caused.
- Read only output fields that exist; the fields each upstream node offers are listed with the errors.
- Never write a secret value into the file; keep {{ secrets.NAME }} references as they are.
- Keep the file's format: YAML stays YAML, JSON stays JSON.

Reply with a JSON object: {"workflow": "<the whole corrected workflow file>", "explanation": "<one or two sentences: what you changed and why>"}.`

// Prompt builds the conversation that asks for a repaired workflow.
func Prompt(c Case) []llm.Message {
	redact := c.Redact
	if redact == nil {
		redact = func(s string) string { return s }
	}
	var b strings.Builder
	lang := "yaml"
	if strings.EqualFold(filepath.Ext(c.File), ".json") {
		lang = "json"
	}
	fmt.Fprintf(&b, "Workflow file %s:\n```%s\n%s\n```\n", filepath.Base(c.File), lang, strings.TrimRight(string(c.Source), "\n"))

	phase := PhaseValidation
	if len(c.Problems) > 0 {
		phase = c.Problems[0].Phase
	}
	if phase == PhaseValidation {
		b.WriteString("\nThe workflow does not validate; nothing ran. Errors:\n")
	} else {
		b.WriteString("\nThe run failed. Errors:\n")
	}
	for i, p := range c.Problems {
		fmt.Fprintf(&b, "%d. %s\n", i+1, redact(describe(p)))
	}

	if c.Steps != nil {
		b.WriteString("\nSteps of the run (last visit of each node):\n")
		for _, s := range c.Steps {
			status := s.Status
			if s.Reused {
				status += " (reused)"
			}
			fmt.Fprintf(&b, "- %s (%s): %s", s.Node, s.Type, status)
			if s.Error != "" {
				fmt.Fprintf(&b, " — %s", redact(s.Error))
			}
			if len(s.Fields) > 0 {
				fmt.Fprintf(&b, "; output fields: %s", strings.Join(s.Fields, ", "))
			}
			b.WriteString("\n")
		}
	}

	if len(c.Earlier) > 0 {
		b.WriteString("\nChanges already made by earlier repairs of this run:\n")
		for _, l := range c.Earlier {
			fmt.Fprintf(&b, "- %s\n", redact(l))
		}
	}

	if len(c.Kinds) > 0 {
		b.WriteString("\nNode kinds used:\n")
		for _, k := range c.Kinds {
			b.WriteString(describeKind(k))
		}
	}
	return []llm.Message{llm.System(system), llm.User(b.String())}
}

// describe renders one problem for the model.
func describe(p Problem) string {
	var b strings.Builder
	if p.Node != "" {
		fmt.Fprintf(&b, "node %s", p.Node)
		if p.Type != "" {
			fmt.Fprintf(&b, " (%s)", p.Type)
		}
		b.WriteString(": ")
	}
	b.WriteString(p.Category)
	if p.Code != "" && p.Code != p.Category {
		fmt.Fprintf(&b, " [%s]", p.Code)
	}
	if p.Status != 0 {
		fmt.Fprintf(&b, ", HTTP status %d", p.Status)
	}
	fmt.Fprintf(&b, ": %s", p.Message)
	if p.Line > 0 {
		fmt.Fprintf(&b, " (line %d, column %d", p.Line, p.Col)
		if p.Path != "" {
			fmt.Fprintf(&b, ", at %s", p.Path)
		}
		b.WriteString(")")
	}
	if p.Body != "" {
		fmt.Fprintf(&b, "\n   response body: %s", p.Body)
	}
	if p.Stderr != "" {
		fmt.Fprintf(&b, "\n   the command's stderr (its end):\n%s", indent(p.Stderr, "     | "))
	}
	if p.Stdout != "" {
		fmt.Fprintf(&b, "\n   the command's stdout (its end):\n%s", indent(p.Stdout, "     | "))
	}
	if len(p.Params) > 0 {
		js, err := json.Marshal(p.Params)
		if err == nil {
			fmt.Fprintf(&b, "\n   parameters as run: %s", clip(string(js), MaxBody))
		}
	}
	if len(p.Upstream) > 0 {
		b.WriteString("\n   fields available upstream:")
		for _, f := range p.Upstream {
			fields := "(none known)"
			if len(f.Fields) > 0 {
				fields = strings.Join(f.Fields, ", ")
			}
			fmt.Fprintf(&b, "\n     %s (%s): %s", f.Node, f.Type, fields)
		}
	}
	return b.String()
}

// describeKind renders a kind's parameters and outputs for the model.
func describeKind(k *node.Spec) string {
	var b strings.Builder
	fmt.Fprintf(&b, "- %s: %s\n", k.Kind, k.Description)
	for _, p := range k.Params {
		fmt.Fprintf(&b, "    %s (%s", p.Name, p.Type)
		if p.Required {
			b.WriteString(", required")
		}
		if p.Default != nil {
			fmt.Fprintf(&b, ", default %v", p.Default)
		}
		if len(p.Enum) > 0 {
			fmt.Fprintf(&b, ", one of %s", strings.Join(p.Enum, "|"))
		}
		fmt.Fprintf(&b, "): %s\n", p.Description)
	}
	if len(k.Outputs) > 0 {
		fmt.Fprintf(&b, "    outputs: %s\n", strings.Join(k.Outputs, ", "))
	}
	return b.String()
}

// Kinds returns the specs of the kinds w uses, sorted by name.
func Kinds(w *workflow.Workflow, reg *node.Registry) []*node.Spec {
	if w == nil || reg == nil {
		return nil
	}
	seen := map[string]bool{}
	var out []*node.Spec
	for _, n := range w.Nodes {
		if seen[n.Type] {
			continue
		}
		seen[n.Type] = true
		if s, ok := reg.Lookup(n.Type); ok {
			out = append(out, s)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Reply is the model's answer: the whole corrected workflow file.
type Reply struct {
	Workflow    []byte
	Explanation string
}

// replySchema is what Ask asks the model for.
var replySchema = map[string]any{
	"type": "object",
	"properties": map[string]any{
		"workflow":    map[string]any{"type": "string", "description": "the whole corrected workflow file"},
		"explanation": map[string]any{"type": "string", "description": "what was changed and why"},
	},
	"required":             []any{"workflow", "explanation"},
	"additionalProperties": false,
}

// ErrNoWorkflow is returned by Ask when the reply holds no workflow.
var ErrNoWorkflow = errors.New("the repair model's reply holds no workflow")

// Ask sends the conversation to the repair model and returns the workflow
// it wrote. The model is asked for JSON {workflow, explanation}
// (llm.ChatJSON, which re-asks once); a reply that is not that JSON but
// holds the workflow in a fenced code block is accepted too. The Response
// carries the tokens used, also when there is an error.
func Ask(ctx context.Context, p llm.Provider, model string, msgs []llm.Message) (*Reply, *llm.Response, error) {
	v, resp, err := llm.ChatJSON(ctx, p, llm.Request{Model: model, Messages: msgs}, replySchema)
	if err != nil {
		var ne *node.Error
		if resp != nil && errors.As(err, &ne) && ne.Category == llm.CategoryMalformed {
			if wf, ok := Extract(resp.Text); ok {
				return &Reply{Workflow: wf}, resp, nil
			}
		}
		return nil, resp, err
	}
	m, _ := v.(map[string]any)
	text, _ := m["workflow"].(string)
	wf, ok := Extract(text)
	if !ok {
		return nil, resp, ErrNoWorkflow
	}
	expl, _ := m["explanation"].(string)
	return &Reply{Workflow: wf, Explanation: strings.TrimSpace(expl)}, resp, nil
}

// fence and nodesKey are compiled on first use: only the repair loop
// needs them.
var fence = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile("(?s)```[A-Za-z0-9_-]*[ \t]*\r?\n(.*?)\r?\n[ \t]*```")
})

// Extract finds a workflow in a model's text: a JSON object
// {"workflow": "..."}, the first fenced code block, or the text itself when
// it looks like a workflow (it has a nodes key). It returns the workflow
// with a final newline.
func Extract(text string) ([]byte, bool) {
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "{") {
		var m map[string]any
		if json.Unmarshal([]byte(t), &m) == nil {
			if s, ok := m["workflow"].(string); ok {
				return Extract(s)
			}
			if _, ok := m["nodes"]; ok {
				return []byte(t + "\n"), true
			}
			return nil, false
		}
	}
	if sub := fence().FindStringSubmatch(t); sub != nil {
		t = strings.TrimSpace(sub[1])
	} else if strings.HasPrefix(t, "```") {
		return nil, false
	}
	if !looksLikeWorkflow(t) {
		return nil, false
	}
	return []byte(t + "\n"), true
}

var nodesKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?m)^\s*"?nodes"?\s*:`) })

func looksLikeWorkflow(t string) bool { return nodesKey().MatchString(t) }

// indent prefixes every line of s.
func indent(s, prefix string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = prefix + l
	}
	return strings.Join(lines, "\n")
}
