// Package preflight finds what would stop a valid workflow from running
// on this machine — models it cannot call, secrets that are not set,
// inputs that are missing or wrong — all at once, as diagnostics beside
// the file's own (skein validate, the MCP validate tool).
package preflight

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/skeinhq/skein/internal/check"
	"github.com/skeinhq/skein/internal/llm/registry"
	"github.com/skeinhq/skein/internal/secrets"
	"github.com/skeinhq/skein/node"
	"github.com/skeinhq/skein/workflow"
)

// Request says what Check checks besides the file.
type Request struct {
	// LookupEnv reads the environment (secrets, SKEIN_LLM_*); nil is
	// os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// SecretsFile is the dotenv file a run would be given.
	SecretsFile string
	// Inputs returns the inputs a run would be given, read against the
	// workflow (its declared types); nil means none were given, so
	// required inputs are only named (warnings), not checked.
	Inputs func(w *workflow.Workflow) (map[string]any, error)
	// Strict makes every problem an error.
	Strict bool
}

// Validate loads and validates a workflow file and, when it is valid,
// adds what Check finds: every problem of the file and of running it
// here, at once. An error is a problem of the request (inputs that cannot
// be read), not of the file.
func Validate(file string, reg *node.Registry, req Request) (*workflow.Workflow, workflow.Diagnostics, error) {
	if reg == nil {
		reg = node.Default
	}
	w, ds := workflow.Load(file, reg)
	if w == nil || ds.HasErrors() {
		return w, ds, nil
	}
	more, err := Check(w, reg, req)
	if err != nil {
		return w, ds, err
	}
	ds = append(ds, more...)
	ds.Sort()
	return w, ds, nil
}

// Check reports what would stop a valid workflow from running here,
// all at once: models its llm and agent nodes, judged checks and expect:
// use that this environment does not configure (no model, an unknown
// provider, no API key), declared secrets that are not set, and inputs.
//
// The file is valid whatever the machine, so these are warnings, and
// errors with Strict; inputs that were given (Inputs not nil) are checked
// as a run checks them, and their problems are errors.
func Check(w *workflow.Workflow, reg *node.Registry, req Request) (workflow.Diagnostics, error) {
	if req.LookupEnv == nil {
		req.LookupEnv = os.LookupEnv
	}
	if reg == nil {
		reg = node.Default
	}
	sev := workflow.Warning
	if req.Strict {
		sev = workflow.Error
	}
	var ds workflow.Diagnostics
	add := func(s workflow.Severity, pos workflow.Pos, nodeID, format string, args ...any) {
		ds = append(ds, workflow.Diagnostic{File: w.File, Line: pos.Line, Col: pos.Col, Node: nodeID, Severity: s, Message: fmt.Sprintf(format, args...)})
	}
	ds = append(ds, modelProblems(w, reg, req.LookupEnv, sev)...)

	// Secrets: every one that is not set, each with where to set it.
	var fromFile map[string]string
	if req.SecretsFile != "" {
		m, err := secrets.ReadDotenv(req.SecretsFile)
		if err != nil {
			add(workflow.Error, workflow.Pos{}, "", "the secrets file: %v", err)
		}
		fromFile = m
	}
	for _, name := range secrets.Missing(w, req.LookupEnv, fromFile) {
		add(sev, orTop(w.KeyPos("secrets")), "", "secret %s is not set here: export SKEIN_SECRET_%s (or %s), or put it in a --secrets-file", name, name, name)
	}

	// Inputs.
	var given map[string]any
	if req.Inputs != nil {
		var err error
		if given, err = req.Inputs(w); err != nil {
			return nil, err
		}
	}
	if given == nil {
		for _, in := range w.Inputs {
			if in.Required && in.Default == nil {
				add(sev, in.Pos, "", "input %s is required and has no default: a run needs -i %s=…", in.Name, in.Name)
			}
		}
	} else {
		for _, e := range w.InputProblems(given) {
			pos := orTop(w.KeyPos("inputs"))
			if in := w.Input(e.Input); in != nil {
				pos = in.Pos
			}
			for _, m := range e.Missing {
				if in := w.Input(m); in != nil {
					add(workflow.Error, in.Pos, "", "input %s is required and was not given: pass -i %s=…", m, m)
				}
			}
			if len(e.Missing) == 0 {
				add(workflow.Error, pos, "", "%s", e.Error())
			}
		}
	}
	ds.Sort()
	return ds, nil
}

func orTop(p workflow.Pos) workflow.Pos {
	if p.Line == 0 {
		return workflow.Pos{Line: 1, Col: 1}
	}
	return p
}

// modelUse is a model name and the nodes that use it.
type modelUse struct {
	name  string
	nodes []*workflow.Node
	pos   workflow.Pos
}

// modelProblems resolves every model the workflow's nodes use (llm and
// agent nodes, a model: parameter, judged checks and expect:) as a run
// would, and reports each one that cannot be, once, at the first node
// that uses it.
func modelProblems(w *workflow.Workflow, reg *node.Registry, getenv func(string) (string, bool), sev workflow.Severity) workflow.Diagnostics {
	uses := map[string]*modelUse{}
	var order []string
	use := func(name string, n *workflow.Node, pos workflow.Pos) {
		u := uses[name]
		if u == nil {
			u = &modelUse{name: name, pos: pos}
			uses[name] = u
			order = append(order, name)
		}
		u.nodes = append(u.nodes, n)
	}
	for _, n := range w.Nodes {
		if n.Disabled {
			continue
		}
		spec, ok := reg.Lookup(n.Type)
		if !ok {
			continue
		}
		for _, p := range spec.Params {
			if p.Ref != node.RefModel {
				continue
			}
			names := modelNames(n.Params[p.Name])
			switch {
			case len(names) > 0:
				for _, name := range names {
					use(name, n, n.ParamPos(p.Name))
				}
			case spec.Category == node.AI:
				d, _ := p.Default.(string)
				use(d, n, n.Pos)
			}
		}
		judged := n.Expect != ""
		for _, c := range n.Checks {
			judged = judged || check.NeedsJudge(c)
		}
		if judged {
			use("judge", n, n.Pos)
		}
		if spec.Category == node.AI && w.LLMConfig("vision") != nil {
			use("vision", n, n.Pos) // it describes the images an agent's tools return
		}
	}
	models := registry.New(w, getenv)
	var ds workflow.Diagnostics
	seen := map[string]bool{} // entries already reported
	for _, name := range order {
		u := uses[name]
		pick, err := models.Check(name)
		if err == nil && w.Limits.MaxCostUSD > 0 && !seen[pick] {
			if entry, model, known := models.Priced(name); !known {
				seen[pick] = true
				ds = append(ds, workflow.Diagnostic{File: w.File, Line: u.pos.Line, Col: u.pos.Col, Node: u.nodes[0].ID, Severity: sev,
					Message: fmt.Sprintf("model %s has no known price, so limits.max_cost_usd cannot count what it costs and a run refuses to call it; set one: llm: {%s: {…, price: {input_per_mtok: 1.0, output_per_mtok: 2.0}}} (US dollars per million tokens)", model, entry)})
			}
		}
		if err == nil || seen[pick] {
			continue
		}
		seen[pick] = true
		var ne *node.Error
		msg := err.Error()
		if errors.As(err, &ne) {
			msg = ne.Message
		}
		ids := make([]string, 0, len(u.nodes))
		for _, n := range u.nodes {
			ids = append(ids, n.ID)
		}
		sort.Strings(ids)
		what := "node " + ids[0]
		if len(ids) > 1 {
			what = "nodes " + strings.Join(ids, ", ")
		}
		ds = append(ds, workflow.Diagnostic{File: w.File, Line: u.pos.Line, Col: u.pos.Col, Node: u.nodes[0].ID, Severity: sev,
			Message: fmt.Sprintf("%s cannot call a model here: %s", what, msg)})
	}
	return ds
}

// modelNames are the models a model parameter names: one, or a list of
// fallbacks; none when it is unset or empty.
func modelNames(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		if x != "" {
			out = append(out, x)
		}
	case []any:
		for _, e := range x {
			if s, ok := e.(string); ok && s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}
