// Package data declares the data-shaping kinds: set and template.
package data

import (
	"sort"
	"strings"

	"github.com/skeinhq/skein/node"
)

// Kind names.
const (
	Set      = "set"
	Template = "template"
)

func init() {
	node.MustRegister(node.Spec{
		Kind: Set, Category: node.Data, Pure: true,
		Description: "Evaluates `values` into its output and assigns `vars` to the run's variables.",
		Params: []node.Param{
			{Name: "values", Type: node.Map, Description: "Templates; the evaluated map is the output."},
			{Name: "vars", Type: node.Map, Description: "Templates assigned to the run's vars."},
		},
		OutputsFrom: func(p map[string]any) []string {
			vals, _ := p["values"].(map[string]any)
			out := make([]string, 0, len(vals))
			for k := range vals {
				out = append(out, k)
			}
			sort.Strings(out)
			return out
		},
		Routes: true,
		RoutesWhen: func(p map[string]any) bool {
			vals, literal := p["values"].(map[string]any)
			_, route := vals["_route"]
			return route || !literal && p["values"] != nil
		},
		Check: func(p map[string]any) []node.ParamError {
			_, hasValues := p["values"]
			_, hasVars := p["vars"]
			if !hasValues && !hasVars {
				return []node.ParamError{{Param: "values", Message: "set needs values, vars or both"}}
			}
			var errs []node.ParamError
			for _, param := range []string{"values", "vars"} {
				m, _ := p[param].(map[string]any)
				if hasBlankKey(m) {
					errs = append(errs, node.ParamError{Param: param, Message: "each of " + param + " needs a name: a key that is empty or blank could never be read"})
				}
			}
			if vals, ok := p["values"].(map[string]any); ok {
				if _, ok := vals["success"]; ok {
					errs = append(errs, node.ParamError{Param: "values.success", Message: "every node's output has success (true when the node succeeded), which would replace this value; give it another name"})
				}
			}
			return errs
		},
	}, func() node.Kind { return setKind{} })
	node.MustRegister(node.Spec{
		Kind: Template, Category: node.Data, Pure: true,
		Description: "Renders `text` into the output `text`.",
		Params: []node.Param{
			{Name: "text", Type: node.String, Required: true, Description: "The template to render."},
		},
		Outputs: []string{"text"},
	}, func() node.Kind { return templateKind{} })
}

// hasBlankKey reports whether m has a key of blanks only.
func hasBlankKey(m map[string]any) bool {
	for k := range m {
		if strings.TrimSpace(k) == "" {
			return true
		}
	}
	return false
}
