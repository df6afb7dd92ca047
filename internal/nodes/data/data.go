// Package data declares the data-shaping kinds: set and template.
package data

import (
	"sort"

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
		Check: func(p map[string]any) []node.ParamError {
			if _, ok := p["values"]; ok {
				return nil
			}
			if _, ok := p["vars"]; ok {
				return nil
			}
			return []node.ParamError{{Param: "values", Message: "set needs values, vars or both"}}
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
