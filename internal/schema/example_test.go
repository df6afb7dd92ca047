package schema_test

import (
	"encoding/json"
	"fmt"

	"github.com/skeinhq/skein/internal/schema"
	"github.com/skeinhq/skein/node"
)

// A kind's parameters become the properties of its node schema. An integer
// parameter may also be a template, known only when the node runs.
func ExampleGenerate() {
	reg := node.NewRegistry()
	reg.MustRegister(node.Spec{
		Kind: "greet", Category: node.Action,
		Params: []node.Param{
			{Name: "times", Type: node.Int, Default: 1, Description: "How often to greet."},
		},
	}, nil)
	raw, err := schema.Generate(reg)
	if err != nil {
		fmt.Println(err)
		return
	}
	var doc struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
			Required   []string                   `json:"required"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		fmt.Println(err)
		return
	}
	greet := doc.Defs["kind.greet"]
	var times any
	_ = json.Unmarshal(greet.Properties["times"], &times)
	out, _ := json.MarshalIndent(times, "", "  ")
	fmt.Println(string(out))
	fmt.Println("required:", greet.Required)
	// Output:
	// {
	//   "anyOf": [
	//     {
	//       "type": "integer"
	//     },
	//     {
	//       "pattern": "^\\s*[-+]?[0-9]+\\s*$",
	//       "type": "string"
	//     },
	//     {
	//       "$ref": "#/$defs/template"
	//     }
	//   ],
	//   "default": 1,
	//   "description": "How often to greet."
	// }
	// required: [id type]
}
