package schema

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/skeinhq/skein/node"
)

// categories in the order the docs list them, with their headings.
var categories = []struct {
	cat   node.Category
	title string
}{
	{node.Trigger, "Triggers"},
	{node.Control, "Control"},
	{node.Data, "Data"},
	{node.Action, "Actions"},
	{node.AI, "AI"},
}

// Markdown returns the reference of the node kinds in reg (node.Default when
// reg is nil): the common fields, then one section per kind, grouped by
// category, with its parameters, handles and output ports. Kinds of a
// category Skein does not know come last, under the category's name.
func Markdown(reg *node.Registry) string {
	if reg == nil {
		reg = node.Default
	}
	byCat := map[node.Category][]*node.Spec{}
	for _, s := range reg.Specs() {
		byCat[s.Category] = append(byCat[s.Category], s)
	}

	var b strings.Builder
	b.WriteString("<!-- Generated from the node kinds' specs by `go test ./internal/schema -update`. Do not edit. -->\n\n")
	b.WriteString("# Node kinds\n\n")
	b.WriteString("A node is a map: the common fields below, and beside them the parameters of its\n")
	b.WriteString("kind (its `type`). Any other key is an error. The JSON Schema of the workflow file,\n")
	b.WriteString("`schema/workflow.schema.json`, is generated from the same declarations.\n\n")
	b.WriteString("A string parameter is a template: `{{ expr }}` parts are evaluated when the node runs.\n")
	b.WriteString("A parameter of another type may also be given as a template, such as\n")
	b.WriteString("`\"{{ inputs.count }}\"`. Parameters of type *expression* are bare expressions, and\n")
	b.WriteString("those marked *plain* take no templates.\n\n")

	b.WriteString("## Common fields\n\n")
	b.WriteString("| Field | Type | Description |\n|---|---|---|\n")
	for _, f := range commonFields() {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", f.name, f.typ, cell(f.desc))
	}

	write := func(title string, specs []*node.Spec) {
		if len(specs) == 0 {
			return
		}
		fmt.Fprintf(&b, "\n## %s\n", title)
		for _, s := range specs {
			writeKind(&b, s)
		}
	}
	for _, c := range categories {
		write(c.title, byCat[c.cat])
		delete(byCat, c.cat)
	}
	var rest []string
	for c := range byCat {
		rest = append(rest, string(c))
	}
	sort.Strings(rest)
	for _, c := range rest {
		title := c
		if title == "" {
			title = "Uncategorised"
		}
		write(title, byCat[node.Category(c)])
	}
	return b.String()
}

func writeKind(b *strings.Builder, s *node.Spec) {
	fmt.Fprintf(b, "\n### `%s`\n\n", s.Kind)
	if s.Description != "" {
		b.WriteString(s.Description + "\n\n")
	}
	if len(s.Params) == 0 {
		b.WriteString("No parameters.\n\n")
	} else {
		b.WriteString("| Parameter | Type | Required | Default | Description |\n|---|---|---|---|---|\n")
		for _, p := range s.Params {
			writeParam(b, "", p)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "**Handles:** %s\n\n", handles(s))
	if s.FallThrough != "" {
		fmt.Fprintf(b, "**When disabled:** follows `%s`.\n\n", s.FallThrough)
	}
	fmt.Fprintf(b, "**Outputs:** %s\n", outputs(s))
}

func writeParam(b *strings.Builder, prefix string, p node.Param) {
	req := ""
	if p.Required {
		req = "yes"
	}
	def := ""
	if p.Default != nil {
		if j, err := json.Marshal(p.Default); err == nil {
			def = "`" + string(j) + "`"
		}
	}
	fmt.Fprintf(b, "| `%s%s` | %s | %s | %s | %s |\n", prefix, p.Name, typeText(p), req, cell(def), cell(p.Description))
	for _, ip := range p.Items {
		writeParam(b, prefix+p.Name+"[].", ip)
	}
}

// typeText is a parameter's type as the docs show it.
func typeText(p node.Param) string {
	var t string
	switch {
	case p.Expr:
		t = "expression"
	case len(p.Enum) > 0:
		vals := make([]string, len(p.Enum))
		for i, v := range p.Enum {
			vals[i] = "`" + v + "`"
		}
		t = strings.Join(vals, " \\| ")
	case p.Type == node.Strings:
		t = "list of strings"
	case p.Type == node.List && len(p.Items) > 0:
		names := make([]string, len(p.Items))
		for i, ip := range p.Items {
			names[i] = ip.Name
		}
		t = "list of {" + strings.Join(names, ", ") + "}"
	case p.Type == node.Int && p.Max != 0:
		t = fmt.Sprintf("integer (%s–%s)", digits(p.Min), digits(p.Max))
	default:
		t = string(p.Type)
	}
	if p.NoTemplate && !p.Expr {
		t += " (plain)"
	}
	return t
}

func handles(s *node.Spec) string {
	var parts []string
	if s.Handles == nil {
		parts = append(parts, "default (an edge without `on`); `error` when `on_error: route`")
	}
	if s.DynamicHandles != nil && s.DynamicHandlesDoc != "" {
		parts = append(parts, s.DynamicHandlesDoc)
	}
	for _, h := range s.Handles {
		if h == node.HandleDefault {
			parts = append(parts, "default (an edge without `on`)")
			continue
		}
		parts = append(parts, "`"+h+"`")
	}
	if s.Routes {
		parts = append(parts, "or any handle the node returns as `_route`")
	}
	if len(parts) == 0 {
		return "none: no edge leaves this node."
	}
	return strings.Join(parts, ", ") + "."
}

func outputs(s *node.Spec) string {
	var parts []string
	for _, o := range s.Outputs {
		parts = append(parts, "`"+o+"`")
	}
	switch {
	case s.OutputsFrom != nil && len(parts) > 0:
		parts = append(parts, "and ports computed from its parameters")
	case s.OutputsFrom != nil:
		parts = append(parts, "ports computed from its parameters (see the description)")
	case s.Outputs == nil:
		return "not declared; any port may be referenced."
	case len(parts) == 0:
		return "none."
	}
	return strings.Join(parts, ", ") + "."
}

// cell makes text safe inside a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	return strings.ReplaceAll(s, "|", "\\|")
}

// digits writes n with thousands separators: 1,000,000.
func digits(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + digits(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
