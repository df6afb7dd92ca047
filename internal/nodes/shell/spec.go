// Package shell runs commands as argv lists (or through /bin/sh only when
// asked with shell: true).
package shell

import "github.com/skeinhq/skein/node"

// Kind is the kind name.
const Kind = "shell"

// Spec declares the shell kind.
var Spec = node.Spec{
	Kind: Kind, Category: node.Action,
	Description: "Runs a command. The output is {stdout, stderr, exit_code, json}; json is stdout parsed when it is JSON.",
	Params: []node.Param{
		{Name: "command", Type: node.Any, Required: true, Description: "The argv list, e.g. [grep, -c, \"{{ inputs.word }}\", file.txt]; a string only with shell: true."},
		{Name: "shell", Type: node.Bool, Default: false, Description: "Run command as a /bin/sh -c string. Templated values in it are not quoted."},
		{Name: "env", Type: node.Map, Description: "Environment variables for the command; secrets reach it only through here."},
		{Name: "cwd", Type: node.String, Description: "Working folder."},
		{Name: "stdin", Type: node.String, Description: "Text written to the command's standard input."},
		{Name: "allow_failure", Type: node.Bool, Default: false, Description: "A non-zero exit does not fail the node."},
		{Name: "max_output", Type: node.Int, Default: 10 << 20, Description: "Bytes kept per stream; the rest is cut and noted."},
	},
	Outputs: []string{"stdout", "stderr", "exit_code", "json", "truncated"},
	Routes:  true,
	Check: func(p map[string]any) []node.ParamError {
		sh, _ := p["shell"].(bool)
		switch c := p["command"].(type) {
		case []any:
			if len(c) == 0 {
				return []node.ParamError{{Param: "command", Message: "command is an empty list; give at least the program"}}
			}
			for _, a := range c {
				switch a.(type) {
				case string, int, float64, bool:
				default:
					return []node.ParamError{{Param: "command", Message: "every argv element must be a string"}}
				}
			}
		case string:
			if !sh {
				return []node.ParamError{{Param: "command", Message: "command is a string; write it as an argv list ([echo, hi]) or set shell: true to run it through /bin/sh"}}
			}
		default:
			return []node.ParamError{{Param: "command", Message: "command must be an argv list of strings"}}
		}
		return nil
	},
}
